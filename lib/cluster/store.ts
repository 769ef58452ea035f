// The queries of cluster mode: an app's per-service Swarm settings (columns of `app_services`).
import type { Db } from '../db/index.js';

export interface ClusterColumns {
  replicas?: number | null;
  /** JSON of the placement. */
  placement?: string | null;
  pinned_node?: string | null;
}

export function clusterRows(db: Db, appId: string) {
  return db
    .selectFrom('app_services')
    .select(['name', 'replicas', 'placement', 'pinned_node'])
    .where('app_id', '=', appId)
    .execute();
}

/** Sets these columns of the service's row, made when the service has none yet. */
export async function upsertClusterColumns(
  db: Db,
  appId: string,
  name: string,
  set: ClusterColumns,
): Promise<void> {
  await db
    .insertInto('app_services')
    .values({ app_id: appId, name, port: null, health_path: null, ...set })
    .onConflict((c) => c.columns(['app_id', 'name']).doUpdateSet(set))
    .execute();
}
