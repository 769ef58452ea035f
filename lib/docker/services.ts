// Live state per service, from the engine (never from our own bookkeeping).
import type { Engine } from './engine.js';
import { assertAppName } from './names.js';
import { listAppContainers, type AppContainer } from './containers.js';

export interface PublishedPort {
  host_ip: string;
  host_port: number;
  container_port: number;
  protocol: string;
}

export interface ServiceState {
  name: string;
  image: string;
  /** running | restarting | paused | created | exited | dead | removing */
  status: string;
  health: AppContainer['health'];
  /** Container ports, like "80/tcp". */
  ports: string[];
  published_ports: PublishedPort[];
  containers: {
    id: string;
    name: string;
    state: string;
    health: AppContainer['health'];
    deployment: string;
    status_text: string;
  }[];
}

const STATE_RANK: Record<string, number> = {
  running: 6,
  restarting: 5,
  paused: 4,
  created: 3,
  removing: 2,
  exited: 1,
  dead: 0,
};

export async function listServices(engine: Engine, app: string): Promise<ServiceState[]> {
  assertAppName(app);
  return servicesOf(await listAppContainers(engine, app));
}

/** Every app's services from one engine call (the app listing), keyed by app name. */
export async function listAllServices(engine: Engine): Promise<Map<string, ServiceState[]>> {
  const byApp = new Map<string, AppContainer[]>();
  for (const c of await listAppContainers(engine, null))
    (byApp.get(c.app) ?? byApp.set(c.app, []).get(c.app)!).push(c);
  return new Map([...byApp].map(([app, list]) => [app, servicesOf(list)]));
}

function servicesOf(containers: AppContainer[]): ServiceState[] {
  const by = new Map<string, AppContainer[]>();
  for (const c of containers) (by.get(c.service) ?? by.set(c.service, []).get(c.service)!).push(c);
  const out: ServiceState[] = [];
  for (const [name, list] of by) {
    // The representative is the "most alive" container, newest first among equals (blue/green overlap).
    const rep = [...list].sort(
      (a, b) => (STATE_RANK[b.state] ?? 0) - (STATE_RANK[a.state] ?? 0) || b.created - a.created,
    )[0];
    const ports = new Set<string>();
    const published: PublishedPort[] = [];
    const seen = new Set<string>();
    for (const p of rep.ports) {
      ports.add(`${p.PrivatePort}/${p.Type}`);
      if (p.PublicPort) {
        const key = `${p.IP}|${p.PublicPort}|${p.PrivatePort}|${p.Type}`;
        if (seen.has(key)) continue;
        seen.add(key);
        published.push({
          host_ip: p.IP,
          host_port: p.PublicPort,
          container_port: p.PrivatePort,
          protocol: p.Type,
        });
      }
    }
    out.push({
      name,
      image: rep.image,
      status: rep.state,
      health: rep.health,
      ports: [...ports].sort(),
      published_ports: published,
      containers: list.map((c) => ({
        id: c.id,
        name: c.name,
        state: c.state,
        health: c.health,
        deployment: c.deployment,
        status_text: c.statusText,
      })),
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}
