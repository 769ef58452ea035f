// The rows the edge reads that belong to no other area's store: each app's routing view (its
// services, a preview's label) and the sleep mark a running container clears.
import type { Db } from '../db/index.js';
import type { AppRow } from './config.js';

export async function appRows(db: Db): Promise<AppRow[]> {
  const apps = await db
    .selectFrom('apps')
    .select(['id', 'name', 'sleeping_at', 'parent_app_id'])
    .where('deleting_at', 'is', null)
    .orderBy('name')
    .execute();
  // A preview's hosts are named after its app and number (pr-<n>-<app>), not after its own row.
  const previews = await db
    .selectFrom('previews')
    .innerJoin('apps as parent', 'parent.id', 'previews.app_id')
    .select(['previews.target_app_id', 'previews.number', 'parent.name'])
    .execute();
  const labels = new Map(previews.map((p) => [p.target_app_id, `pr-${p.number}-${p.name}`]));
  const services = await db
    .selectFrom('app_services')
    .select(['app_id', 'name', 'port'])
    .orderBy('app_id')
    .orderBy('name')
    .execute();
  const by = new Map<string, AppRow['services']>();
  for (const s of services) {
    let list = by.get(s.app_id);
    if (!list) by.set(s.app_id, (list = []));
    list.push({ name: s.name, port: s.port });
  }
  return apps.flatMap((a) => {
    const label = labels.get(a.id);
    if (a.parent_app_id && !label) return [];
    const row = { id: a.id, name: a.name, services: by.get(a.id) ?? [], sleeping: !!a.sleeping_at };
    return label ? { ...row, label } : row;
  });
}

/**
 * Containers of the app run again (a deploy, a start, a wake): its hosts route to them, not to the
 * wake path. The mark is routing state the proxy reads above; lib/sleep sets it.
 */
export async function clearSleepMark(db: Db, appId: string): Promise<void> {
  await db
    .updateTable('apps')
    .set({ sleeping_at: null })
    .where('id', '=', appId)
    .where('sleeping_at', 'is not', null)
    .execute();
}
