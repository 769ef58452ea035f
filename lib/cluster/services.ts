// Cluster mode's answers to what lib/apps/ops.ts asks of the engine: live services with their
// tasks, stop/start/restart, removal. Only Swarm services carrying every ownership label are
// read or touched (lib/cluster/spec.ts isOurService).
import { guard, isNotFound, statusOf, type Engine } from '../docker/engine.js';
import { LABEL_APP, LABEL_SERVICE } from '../docker/names.js';
import { appSwarmServices, updateService } from './rollout.js';
import { isOurService } from './spec.js';
import { nodeNames, serviceTasks } from './tasks.js';
import type { ClusterSettings } from './settings.js';

export interface SwarmServiceView {
  name: string;
  image: string;
  status: string;
  health: string | null;
  published_ports: { host_ip: string; host_port: number; container_port: number; protocol: string }[];
  tasks: { node: string; state: string; container_id?: string }[];
}

const LIVE = new Set(['new', 'pending', 'assigned', 'accepted', 'preparing', 'ready', 'starting', 'running']);

export async function swarmServices(engine: Engine, app: string): Promise<SwarmServiceView[]> {
  const services = await appSwarmServices(engine, app);
  if (!services.length) return [];
  const { names, down } = await nodeNames(engine);
  const out: SwarmServiceView[] = [];
  for (const s of services) {
    // A task being replaced is shown until it stops; one on a node that is down never reports
    // its end (its last state stays `running`), so it is shown only while still wanted.
    const tasks = (await serviceTasks(engine, s.Spec.Name!)).filter(
      (t) => t.DesiredState === 'running' || (LIVE.has(t.Status?.State ?? '') && !down.has(t.NodeID ?? '')),
    );
    const running = tasks.filter((t) => t.Status?.State === 'running').length;
    const wanted = (s.Spec.Mode as { Replicated?: { Replicas?: number } })?.Replicated?.Replicas ?? 0;
    const ports = ((s.Spec.EndpointSpec?.Ports ?? []) as Array<Record<string, unknown>>).map((p) => ({
      host_ip: '',
      host_port: Number(p.PublishedPort ?? 0),
      container_port: Number(p.TargetPort ?? 0),
      protocol: String(p.Protocol ?? 'tcp'),
    }));
    out.push({
      name: s.Spec.Labels?.[LABEL_SERVICE] ?? s.Spec.Name!,
      image: String(
        (s.Spec.TaskTemplate as { ContainerSpec?: { Image?: string } })?.ContainerSpec?.Image ?? '',
      ),
      status: wanted === 0 ? 'exited' : running ? 'running' : tasks.length ? 'created' : 'exited',
      health: null,
      published_ports: ports,
      tasks: tasks.map((t) => ({
        node: names.get(t.NodeID ?? '') ?? t.NodeID ?? '',
        state: t.Status?.State ?? 'unknown',
        ...(t.Status?.ContainerStatus?.ContainerID
          ? { container_id: t.Status.ContainerStatus.ContainerID }
          : {}),
      })),
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Per app, each Swarm service as the status derivation (lib/apps/status.ts) reads a service: running
 * and healthy ("none") when every wanted replica's task runs (a task with a health check only
 * counts as running once healthy); running but "starting" when some do; exited when none do.
 */
export async function swarmServiceStates(
  engine: Engine,
  app: string | null,
): Promise<Map<string, Array<{ name: string; status: string; health: string }>>> {
  const list = (await guard(engine, () =>
    engine.docker.listServices({ filters: { label: [app ? `${LABEL_APP}=${app}` : LABEL_APP] } }),
  )) as Array<{ ID: string; Spec: { Name?: string; Labels?: Record<string, string>; Mode?: unknown } }>;
  const ours = list.filter((s) => isOurService(engine, s, s.Spec.Labels?.[LABEL_APP] ?? ''));
  const out = new Map<string, Array<{ name: string; status: string; health: string }>>();
  if (!ours.length) return out;
  const tasks = (await guard(engine, () =>
    engine.docker.listTasks({ filters: { 'desired-state': ['running'] } }),
  )) as Array<{ ServiceID?: string; Status?: { State?: string } }>;
  for (const s of ours) {
    const wanted = (s.Spec.Mode as { Replicated?: { Replicas?: number } })?.Replicated?.Replicas ?? 0;
    const running = tasks.filter((t) => t.ServiceID === s.ID && t.Status?.State === 'running').length;
    const a = s.Spec.Labels![LABEL_APP]!;
    (out.get(a) ?? out.set(a, []).get(a)!).push({
      name: s.Spec.Labels![LABEL_SERVICE]!,
      status: running ? 'running' : 'exited',
      health: wanted > 0 && running >= wanted ? 'none' : 'starting',
    });
  }
  return out;
}

/**
 * Stop scales to 0, start back to the service's replicas setting, restart replaces every task
 * (ForceUpdate, start-first like a deploy). Returns the Swarm service names touched.
 */
export async function swarmLifecycle(
  engine: Engine,
  app: string,
  action: 'start' | 'stop' | 'restart',
  replicasOf: (service: string) => number,
  service?: string,
): Promise<string[]> {
  const touched: string[] = [];
  for (const s of await appSwarmServices(engine, app)) {
    const svc = s.Spec.Labels?.[LABEL_SERVICE] ?? '';
    if (service && svc !== service) continue;
    const spec = structuredClone(s.Spec) as typeof s.Spec & {
      Mode?: { Replicated?: { Replicas?: number } };
      TaskTemplate: { ForceUpdate?: number };
    };
    if (action === 'restart') spec.TaskTemplate.ForceUpdate = (spec.TaskTemplate.ForceUpdate ?? 0) + 1;
    else spec.Mode = { Replicated: { Replicas: action === 'stop' ? 0 : replicasOf(svc) } };
    // No credentials sent: the swarm keeps the ones the deploy gave it (lib/cluster/rollout.ts).
    await guard(engine, () => updateService(engine, s.ID, { version: s.Version.Index }, spec));
    touched.push(s.Spec.Name!);
  }
  return touched;
}

/**
 * Applies a service's replicas and placement to its running Swarm service at once (a stopped one,
 * at 0 replicas, stays stopped: a start scales it to the setting). A volume-backed service keeps
 * its node. False when the app has no such Swarm service yet: the next deploy applies them.
 */
export async function applyClusterSettings(
  engine: Engine,
  app: string,
  service: string,
  settings: ClusterSettings,
): Promise<boolean> {
  const s = (await appSwarmServices(engine, app)).find((x) => x.Spec.Labels?.[LABEL_SERVICE] === service);
  if (!s) return false;
  const spec = structuredClone(s.Spec) as typeof s.Spec & {
    Mode?: { Replicated?: { Replicas?: number } };
    TaskTemplate: { Placement?: { Constraints?: string[] } };
  };
  if ((spec.Mode?.Replicated?.Replicas ?? 1) > 0)
    spec.Mode = { Replicated: { Replicas: settings.replicas ?? 1 } };
  const constraints = [...(settings.placement?.constraints ?? [])];
  if (settings.pinned_node) constraints.push(`node.id==${settings.pinned_node}`);
  spec.TaskTemplate.Placement = { ...spec.TaskTemplate.Placement, Constraints: constraints };
  // No credentials sent: a task placed on a node without the image pulls it with the deploy's.
  await guard(engine, () => updateService(engine, s.ID, { version: s.Version.Index }, spec));
  return true;
}

/** Removes the app's Swarm services (its runs' too); their tasks' containers go with them, on every node. */
export async function removeSwarmServices(engine: Engine, app: string): Promise<string[]> {
  const removed: string[] = [];
  for (const s of await appSwarmServices(engine, app, { runs: true })) {
    try {
      await guard(engine, () => engine.docker.getService(s.ID).remove());
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    removed.push(s.Spec.Name!);
  }
  // The overlay networks can only go once no task is attached any more.
  const until = Date.now() + 30_000;
  for (const name of removed) {
    while (Date.now() < until) {
      const left = await serviceTasks(engine, name).catch((e) =>
        statusOf(e) === 404 ? [] : Promise.reject(e),
      );
      if (!left.some((t) => LIVE.has(t.Status?.State ?? ''))) break;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return removed;
}
