// The instance's own queries: what its database holds at all (apps, databases, its size on disk).
import type { Db } from '../db/index.js';
import { dialectOf, sql } from '../db/kysely.js';

/** Whether the database has any app or managed database (a fresh install has neither). */
export async function anyAppOrDatabase(db: Db): Promise<boolean> {
  const [app, database] = await Promise.all([
    db.selectFrom('apps').select('id').limit(1).executeTakeFirst(),
    db.selectFrom('app_databases').select('id').limit(1).executeTakeFirst(),
  ]);
  return !!app || !!database;
}

/** The database's size in bytes, as its own engine counts it. */
export function databaseSize(db: Db): Promise<number> {
  return (
    dialectOf(db) === 'postgres'
      ? sql<{ size: number }>`select pg_database_size(current_database()) as size`
      : sql<{
          size: number;
        }>`select page_count * page_size as size from pragma_page_count(), pragma_page_size()`
  )
    .execute(db)
    .then((r) => Number(r.rows[0]?.size ?? 0));
}

export async function liveSet(db: Db): Promise<LiveSet> {
  const [apps, databases] = await Promise.all([
    db.selectFrom('apps').select('name').execute(),
    db.selectFrom('app_databases').select('id').execute(),
  ]);
  return { apps: new Set(apps.map((a) => a.name)), databases: new Set(databases.map((d) => d.id)) };
}

/** What this instance's database still has: the apps (by name) and databases whose objects stay. */
export interface LiveSet {
  apps: ReadonlySet<string>;
  databases: ReadonlySet<string>;
}
