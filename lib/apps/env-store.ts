// Every query of app variables (`app_env`): rows hold the sealed value, bound to the app and key
// (env.ts seals, opens and checks them).
import type { Selectable } from 'kysely';
import type { Db } from '../db/index.js';
import { lockedOn } from '../db/index.js';
import type { AppEnvTable } from '../db/schema.js';

export type EnvRow = Selectable<AppEnvTable>;

/** The app's variables, by key; `byKey: false` answers them in the database's own order. */
export function envRows(
  db: Db,
  appId: string,
  opts: { byKey: boolean } = { byKey: true },
): Promise<EnvRow[]> {
  const q = db.selectFrom('app_env').selectAll().where('app_id', '=', appId);
  return (opts.byKey ? q.orderBy('key') : q).execute();
}

export function envRow(db: Db, appId: string, key: string): Promise<EnvRow | undefined> {
  return db
    .selectFrom('app_env')
    .selectAll()
    .where('app_id', '=', appId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/**
 * Locks the app's own row (PostgreSQL) for the caller's transaction: the set of variables is the
 * app's rows, some yet to exist, so two changes of one app's variables run one after the other.
 */
export async function lockAppVariables(tx: Db, appId: string): Promise<void> {
  await tx.selectFrom('apps').select('id').where('id', '=', appId).$call(lockedOn(tx)).execute();
}

/** The app's whole set becomes `rows`. */
export async function replaceEnvRows(tx: Db, appId: string, rows: EnvRow[]): Promise<void> {
  await tx.deleteFrom('app_env').where('app_id', '=', appId).execute();
  if (rows.length) await tx.insertInto('app_env').values(rows).execute();
}

export async function upsertEnvRow(tx: Db, row: EnvRow): Promise<void> {
  await tx
    .insertInto('app_env')
    .values(row)
    .onConflict((c) => c.columns(['app_id', 'key']).doUpdateSet({ secret: row.secret, sealed: row.sealed }))
    .execute();
}

/** False when the app has no such variable. */
export async function deleteEnvRow(tx: Db, appId: string, key: string): Promise<boolean> {
  const r = await tx
    .deleteFrom('app_env')
    .where('app_id', '=', appId)
    .where('key', '=', key)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The app's variables marked secret (key and sealed value). */
export function secretEnvRows(db: Db, appId: string): Promise<Array<Pick<EnvRow, 'key' | 'sealed'>>> {
  return db
    .selectFrom('app_env')
    .select(['key', 'sealed'])
    .where('app_id', '=', appId)
    .where('secret', '=', 1)
    .execute();
}
