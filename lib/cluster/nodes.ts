// The swarm's nodes as the API shows them, and the two changes an operator makes to one: its
// availability and its labels (PATCH), and its removal once it is down or drained (DELETE).
// The engine the control plane talks to is a manager's (SVC_DOCKER_SOCKET on the manager host).
import type { Services } from '../http/handler.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import { guard, isNotFound, statusOf } from '../docker/engine.js';

export const NODE_ROLES = ['manager', 'worker'] as const;
export const NODE_STATUSES = ['ready', 'down', 'unknown'] as const;
export const NODE_AVAILABILITIES = ['active', 'pause', 'drain'] as const;

export type NodeAvailability = (typeof NODE_AVAILABILITIES)[number];

export interface ClusterNodeView {
  id: string;
  hostname: string;
  role: (typeof NODE_ROLES)[number];
  status: (typeof NODE_STATUSES)[number];
  availability: NodeAvailability;
  addr: string | null;
  labels: Record<string, string>;
  engine_version: string | null;
  cpus: number;
  memory_bytes: number;
  /** Running tasks on the node. */
  tasks: number;
}

/** Labels the product sets itself (pinning volume-backed services): an operator cannot write them. */
export const RESERVED_LABEL_PREFIX = 'svc.';
export const LABEL_KEY = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$/;
export const LABEL_VALUE = /^[A-Za-z0-9._:/@+-]{0,128}$/;
export const MAX_LABELS = 32;

/** A Swarm node id: 25 lowercase base-36 characters. */
export const NODE_ID = /^[a-z0-9]{25}$/;

export interface SwarmNode {
  ID: string;
  Version: { Index: number };
  Spec: { Role?: string; Availability?: string; Labels?: Record<string, string>; Name?: string };
  Description?: {
    Hostname?: string;
    Resources?: { NanoCPUs?: number; MemoryBytes?: number };
    Engine?: { EngineVersion?: string };
  };
  Status?: { State?: string; Addr?: string };
  ManagerStatus?: { Leader?: boolean; Reachability?: string; Addr?: string };
}

/** Every nodes route answers this in single-host mode. */
export function requireClusterMode(env: Services): void {
  if (env.config.cluster.mode !== 'swarm')
    throw conflict(
      'cluster mode is off (SVC_CLUSTER is not "swarm"): ' +
        'this instance runs on one Docker host and has no nodes',
    );
}

function statusOfNode(n: SwarmNode): ClusterNodeView['status'] {
  const s = n.Status?.State;
  if (s === 'ready') return 'ready';
  if (s === 'down' || s === 'disconnected') return 'down';
  return 'unknown';
}

export function nodeView(n: SwarmNode, running: ReadonlyMap<string, number>): ClusterNodeView {
  const availability = n.Spec.Availability;
  return {
    id: n.ID,
    hostname: n.Description?.Hostname ?? n.ID,
    role: n.Spec.Role === 'manager' ? 'manager' : 'worker',
    status: statusOfNode(n),
    availability: availability === 'pause' || availability === 'drain' ? availability : 'active',
    addr: n.Status?.Addr && n.Status.Addr !== '0.0.0.0' ? n.Status.Addr : null,
    labels: { ...(n.Spec.Labels ?? {}) },
    engine_version: n.Description?.Engine?.EngineVersion ?? null,
    cpus: (n.Description?.Resources?.NanoCPUs ?? 0) / 1e9,
    memory_bytes: n.Description?.Resources?.MemoryBytes ?? 0,
    tasks: running.get(n.ID) ?? 0,
  };
}

export async function swarmNodes(env: Services): Promise<SwarmNode[]> {
  return guard(env.engine, async () => {
    try {
      return (await env.engine.docker.listNodes()) as unknown as SwarmNode[];
    } catch (e) {
      // 503 from the engine: it is not a swarm manager (or not in a swarm at all).
      if (statusOf(e) === 503) throw conflict('the Docker engine is not a manager of a swarm');
      throw e;
    }
  });
}

export async function listNodes(env: Services): Promise<ClusterNodeView[]> {
  const [nodes, tasks] = await Promise.all([
    swarmNodes(env),
    guard(
      env.engine,
      () =>
        env.engine.docker.listTasks({ filters: { 'desired-state': ['running'] } }) as Promise<
          Array<{ NodeID?: string; Status?: { State?: string } }>
        >,
    ),
  ]);
  const running = new Map<string, number>();
  for (const t of tasks)
    if (t.NodeID && t.Status?.State === 'running') running.set(t.NodeID, (running.get(t.NodeID) ?? 0) + 1);
  return nodes
    .map((n) => nodeView(n, running))
    .sort((a, b) => a.hostname.localeCompare(b.hostname) || a.id.localeCompare(b.id));
}

async function inspectNode(env: Services, id: string): Promise<SwarmNode> {
  return guard(env.engine, async () => {
    try {
      return (await env.engine.docker.getNode(id).inspect()) as SwarmNode;
    } catch (e) {
      if (isNotFound(e)) throw notFound('No such node');
      throw e;
    }
  });
}

async function nodeById(env: Services, id: string): Promise<ClusterNodeView> {
  const all = await listNodes(env);
  const found = all.find((n) => n.id === id);
  if (!found) throw notFound('No such node');
  return found;
}

/** Operator labels: reserved ones are refused here (the schema checks the charset and bounds). */
export function checkLabels(labels: Record<string, string>): void {
  const reserved = Object.keys(labels).filter((k) => k.startsWith(RESERVED_LABEL_PREFIX));
  if (reserved.length)
    throw badRequest(`labels starting with "${RESERVED_LABEL_PREFIX}" are reserved for the control plane`, [
      { field: 'labels', message: `reserved: ${reserved.join(', ')}` },
    ]);
}

/**
 * Availability and labels through node.update with the node's current version and its whole spec.
 * `labels` replaces the operator's labels; the reserved ones the control plane set stay.
 */
export async function updateNode(
  env: Services,
  id: string,
  change: { availability?: NodeAvailability; labels?: Record<string, string> },
): Promise<{ before: ClusterNodeView; after: ClusterNodeView }> {
  if (change.labels) checkLabels(change.labels);
  const before = await nodeById(env, id);
  // The engine refuses an update whose version is stale (another change came first): read again.
  for (let attempt = 0; ; attempt++) {
    const current = await inspectNode(env, id);
    const labels = change.labels
      ? {
          ...Object.fromEntries(
            Object.entries(current.Spec.Labels ?? {}).filter(([k]) => k.startsWith(RESERVED_LABEL_PREFIX)),
          ),
          ...change.labels,
        }
      : (current.Spec.Labels ?? {});
    const spec = {
      ...current.Spec,
      Labels: labels,
      ...(change.availability ? { Availability: change.availability } : {}),
    };
    try {
      await guard(env.engine, () =>
        env.engine.docker.getNode(id).update({ _query: { version: current.Version.Index }, _body: spec }),
      );
      break;
    } catch (e) {
      if (attempt < 3 && statusOf(e) === 500 && /out of sequence/i.test(String(e))) continue;
      if (isNotFound(e)) throw notFound('No such node');
      throw e;
    }
  }
  return { before, after: await nodeById(env, id) };
}

/**
 * Removes a node that is down (lost) or drained (its tasks moved away). A manager is demoted and
 * removed with the swarm's own tools on a manager host, never from here: losing one may cost the
 * swarm its quorum.
 */
export async function removeNode(env: Services, id: string): Promise<ClusterNodeView> {
  const node = await nodeById(env, id);
  if (node.role === 'manager')
    throw conflict(
      'a manager cannot be removed here: demote it first (docker node demote on a manager), then drain it',
    );
  if (node.status !== 'down' && node.availability !== 'drain')
    throw conflict(
      `the node is ${node.status} and ${node.availability}: ` +
        'drain it first (PATCH availability "drain"), or remove it once it is down',
    );
  await guard(env.engine, async () => {
    try {
      // A drained node that still answers is removed by force: the operator asked it to leave.
      await env.engine.docker.getNode(id).remove({ force: node.status !== 'down' });
    } catch (e) {
      if (isNotFound(e)) throw notFound('No such node');
      throw e;
    }
  });
  return node;
}

/** Counts for instance info and the posture check. */
export async function clusterCounts(
  env: Services,
): Promise<{ nodes: number; managers: number; managersReady: number; down: string[] }> {
  const nodes = await swarmNodes(env);
  const managers = nodes.filter((n) => n.Spec.Role === 'manager');
  return {
    nodes: nodes.length,
    managers: managers.length,
    managersReady: managers.filter((n) => statusOfNode(n) === 'ready').length,
    down: nodes.filter((n) => statusOfNode(n) === 'down').map((n) => n.Description?.Hostname ?? n.ID),
  };
}
