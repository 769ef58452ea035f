// Which app each item of a recovery report concerns, for the reach of a caller limited to some
// apps: an app item names its app (a preview's own row answers its app), a database item the app
// that owns the database. Items whose app is gone since answer nothing.
import type { Db } from '../db/index.js';

export async function appsOfRecoveryItems(
  db: Db,
  items: ReadonlyArray<{ kind: string; id: string }>,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const dbIds = items.filter((i) => i.kind === 'database').map((i) => i.id);
  const owners = new Map<string, string>();
  if (dbIds.length) {
    const rows = await db
      .selectFrom('app_databases')
      .select(['id', 'app_id'])
      .where('id', 'in', dbIds)
      .execute();
    for (const r of rows) owners.set(r.id, r.app_id);
  }
  const appIds = [
    ...new Set(items.map((i) => (i.kind === 'database' ? owners.get(i.id) : i.id)).filter((x) => !!x)),
  ] as string[];
  if (appIds.length === 0) return out;
  const apps = await db
    .selectFrom('apps')
    .select(['id', 'parent_app_id'])
    .where('id', 'in', appIds)
    .execute();
  const top = new Map(apps.map((a) => [a.id, a.parent_app_id ?? a.id]));
  for (const i of items) {
    const app = top.get((i.kind === 'database' ? owners.get(i.id) : i.id) ?? '');
    if (app) out.set(`${i.kind}\u0000${i.id}`, app);
  }
  return out;
}

/** The apps a recovery brings back (previews' own rows included), oldest first. */
export function recoverableApps(db: Db) {
  return db
    .selectFrom('apps')
    .select(['id', 'name', 'parent_app_id'])
    .where('deleting_at', 'is', null)
    .orderBy('created_at')
    .execute();
}

export function allPreviewRows(db: Db) {
  return db.selectFrom('previews').selectAll().execute();
}

/** Every managed database's row, oldest first. */
export function allDatabaseRows(db: Db) {
  return db.selectFrom('app_databases').selectAll().orderBy('created_at').execute();
}
