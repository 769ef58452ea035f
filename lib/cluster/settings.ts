// Per service settings that only cluster mode reads: replicas, placement constraints, and the node
// a volume-backed service is pinned to. Constraints are input: only the three forms documented in
// docs/cluster.md pass, so nothing unchecked ever reaches the engine.
import type { Db } from '../db/index.js';
import { clusterRows, upsertClusterColumns, type ClusterColumns } from './store.js';

export const MAX_REPLICAS = 50;

export interface Placement {
  constraints: string[];
}

export interface ClusterSettings {
  /** null: one replica. */
  replicas: number | null;
  placement: Placement | null;
  /** The swarm node id its named volumes live on (set at its first deploy). */
  pinned_node: string | null;
}

const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const VALUE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const ROLES = ['manager', 'worker'] as const;

/** Why a constraint is refused, or null when it is one of `node.labels.<k>`, `node.hostname`, `node.role`. */
export function constraintProblem(c: string): string | null {
  const m = /^(node\.labels\.([^=!\s]+)|node\.hostname|node\.role)\s*(==|!=)\s*(\S+)$/.exec(c);
  if (!m)
    return `"${c.slice(0, 80)}" is not node.labels.<key>==<value>, node.hostname==<host> or node.role==<role> (or !=)`;
  if (m[2] !== undefined && !LABEL_KEY.test(m[2])) return `label key "${m[2]}" has characters it cannot have`;
  if (!VALUE.test(m[4]!)) return `value "${m[4]!.slice(0, 80)}" has characters it cannot have`;
  if (m[1] === 'node.role' && !(ROLES as readonly string[]).includes(m[4]!))
    return `node.role is manager or worker, not "${m[4]}"`;
  return null;
}

/** The engine's form of a checked constraint (no spaces around the operator). */
export function normalizeConstraint(c: string): string {
  return c.replace(/\s*(==|!=)\s*/, '$1');
}

export async function clusterSettings(db: Db, appId: string): Promise<Map<string, ClusterSettings>> {
  const rows = await clusterRows(db, appId);
  return new Map(
    rows.map((r) => [
      r.name,
      {
        replicas: r.replicas ?? null,
        placement: r.placement ? (JSON.parse(r.placement) as Placement) : null,
        pinned_node: r.pinned_node ?? null,
      },
    ]),
  );
}

export async function patchClusterSettings(
  db: Db,
  appId: string,
  name: string,
  patch: { replicas?: number | null; placement?: Placement | null; pinned_node?: string | null },
): Promise<void> {
  const set: ClusterColumns = {};
  if (patch.replicas !== undefined) set.replicas = patch.replicas;
  if (patch.placement !== undefined)
    set.placement = patch.placement
      ? JSON.stringify({ constraints: patch.placement.constraints.map(normalizeConstraint) })
      : null;
  if (patch.pinned_node !== undefined) set.pinned_node = patch.pinned_node;
  if (!Object.keys(set).length) return;
  await upsertClusterColumns(db, appId, name, set);
}
