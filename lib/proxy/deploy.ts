// The deployment pipeline's and the lifecycle's way into the proxy: the addresses of a service's
// containers on the app's own bridge network, which the resolver answers Caddy's lookups with.
// Caddy runs on the host, which routes to every bridge network itself, so nothing is published on
// a host interface for the proxy to reach it.
import type { Services } from '../http/handler.js';
import { clearSleepMark } from './store.js';
import { guard, listAppContainers, networkName, type Engine } from '../docker/index.js';
import { removeUpstreams, setUpstreams } from './upstreams-store.js';

type EdgeEnv = Pick<Services, 'db' | 'engine' | 'edge' | 'now'>;

/** The container's IPv4 address on the app's default network, else on any of its networks. */
export async function containerAddress(
  engine: Engine,
  app: string,
  containerId: string,
): Promise<string | null> {
  const info = await guard(engine, () => engine.docker.getContainer(containerId).inspect());
  const nets = info.NetworkSettings?.Networks ?? {};
  const own = nets[networkName(app)]?.IPAddress;
  if (own) return own;
  for (const n of Object.values(nets)) if (n?.IPAddress) return n.IPAddress;
  return null;
}

async function addressesBy(
  env: EdgeEnv,
  app: string,
  containers: ReadonlyArray<{ service: string; id: string }>,
): Promise<Map<string, string[]>> {
  const by = new Map<string, string[]>();
  for (const c of containers) {
    const ip = await containerAddress(env.engine, app, c.id).catch(() => null);
    const list = by.get(c.service) ?? by.set(c.service, []).get(c.service)!;
    if (ip) list.push(ip);
  }
  return by;
}

/**
 * After the health gate: every route of the app's services points at the new containers. The rows
 * change, the resolver answers with them and Caddy's config is left alone (a sync runs, which
 * loads only when the app's hosts or routes changed: a first deploy, a new service). Returns once
 * Caddy picked the new answer up, true: then new connections go to the new containers, and the old
 * ones may drain and stop. False when the proxy is off.
 */
export async function switchToContainers(
  env: EdgeEnv,
  app: { id: string; name: string },
  containers: ReadonlyArray<{ service: string; id: string }>,
  log: (line: string) => void,
): Promise<boolean> {
  const by = await addressesBy(env, app.name, containers);
  await removeUpstreams(env.db, app.id);
  for (const [service, addrs] of by)
    if (addrs.length) await setUpstreams(env.db, app.id, service, addrs, env.now());
  // Containers that run (a deploy, a start, a wake) end a sleep: the same answer routes to them.
  if (containers.length) await clearSleepMark(env.db, app.id);
  if (!env.edge.proxy.enabled) return false;
  const [waited, st] = await Promise.all([
    env.edge.publish(app.id),
    env.edge.proxy.sync(`deploy ${app.name}`),
  ]);
  const routed = [...by].filter(([, a]) => a.length).map(([s, a]) => `${s} -> ${a.join(', ')}`);
  if (waited !== null)
    log(
      `proxy: routes switched to the new containers${routed.length ? ` (${routed.join('; ')})` : ''}; Caddy took the new answer after ${Math.round(waited)} ms`,
    );
  if (!st.synced) log(`proxy: not in sync (${st.error ?? 'unknown'}); new hosts follow at its next sync`);
  // Cluster mode has no resolver: the sync is the switch (a woken app's wake route goes away).
  return env.edge.resolver ? waited !== null : st.synced;
}

/** After a start or restart outside a deployment: routes follow whatever runs now. */
export async function followRunning(env: EdgeEnv, app: { id: string; name: string }): Promise<void> {
  const running = (await listAppContainers(env.engine, app.name)).filter((c) => c.state === 'running');
  await switchToContainers(env, app, running, () => {});
}
