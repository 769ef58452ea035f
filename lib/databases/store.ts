// Every query of managed databases: their rows (app_databases) and the app variable each one's
// connection URL is kept in. Provisioning, backups, previews and recovery call these by name.
import type { Db } from '../db/index.js';
import { lockedOn } from '../db/index.js';
import type { AppDatabaseTable } from '../db/schema.js';
import { notFound } from '../http/errors.js';
import type { Sealer } from '../crypto/seal.js';
import { envBinding } from '../apps/env.js';

/**
 * Writes a new database's row and the app variable holding its connection URL, under the lock a
 * change of the app's variables takes, so the name checked stays free until written. False, and
 * nothing written, when the app already has a variable of that name.
 */
export async function insertDatabase(
  db: Db,
  row: AppDatabaseTable,
  variable: { key: string; sealed: string },
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    await tx.selectFrom('apps').select('id').where('id', '=', row.app_id).$call(lockedOn(tx)).execute();
    const taken = await tx
      .selectFrom('app_env')
      .select('key')
      .where('app_id', '=', row.app_id)
      .where('key', '=', variable.key)
      .executeTakeFirst();
    if (taken) return false;
    await tx.insertInto('app_databases').values(row).execute();
    await tx
      .insertInto('app_env')
      .values({ app_id: row.app_id, key: variable.key, secret: 1, sealed: variable.sealed })
      .execute();
    return true;
  });
}

export async function setDatabaseStatus(
  db: Db,
  id: string,
  status: AppDatabaseTable['status'],
  error: string | null,
): Promise<void> {
  await db.updateTable('app_databases').set({ status, error }).where('id', '=', id).execute();
}

/** Provisioning the process died during cannot finish: those rows end in error with `error`. */
export async function failProvisioning(db: Db, error: string): Promise<void> {
  await db
    .updateTable('app_databases')
    .set({ status: 'error', error })
    .where('status', '=', 'provisioning')
    .execute();
}

/** The database of an app, or 404. */
export async function getDatabaseRow(db: Db, appId: string, id: string): Promise<AppDatabaseTable> {
  const r = await db
    .selectFrom('app_databases')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw notFound('No such database');
  return r;
}

export function findDatabase(db: Db, id: string): Promise<AppDatabaseTable | undefined> {
  return db.selectFrom('app_databases').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function isDatabaseOfApp(db: Db, appId: string, id: string): Promise<boolean> {
  return (
    (await db
      .selectFrom('app_databases')
      .select('id')
      .where('app_id', '=', appId)
      .where('id', '=', id)
      .executeTakeFirst()) !== undefined
  );
}

/** The databases of one app (every app's when appId is null), oldest first. */
export function databaseRows(db: Db, appId: string | null): Promise<AppDatabaseTable[]> {
  let q = db.selectFrom('app_databases').selectAll().orderBy('created_at');
  if (appId) q = q.where('app_id', '=', appId);
  return q.execute();
}

/** Every database, in the database's own order. */
export function allDatabases(db: Db): Promise<AppDatabaseTable[]> {
  return db.selectFrom('app_databases').selectAll().execute();
}

export async function databaseIds(db: Db): Promise<Set<string>> {
  return new Set((await db.selectFrom('app_databases').select('id').execute()).map((r) => r.id));
}

/** Removes the row and the app variable it set, together. */
export async function deleteDatabaseRow(
  db: Db,
  row: Pick<AppDatabaseTable, 'id' | 'app_id' | 'env_var'>,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('app_env').where('app_id', '=', row.app_id).where('key', '=', row.env_var).execute();
    await tx.deleteFrom('app_databases').where('id', '=', row.id).execute();
  });
}

/**
 * A database whose provisioning failed leaves no connection URL behind: the app's variable it
 * reserved is removed while it still holds that URL (an operator who set it since keeps theirs).
 */
export async function dropConnectionVar(
  db: Db,
  sealer: Sealer,
  appId: string,
  key: string,
  url: string,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('app_env')
      .select(['sealed'])
      .where('app_id', '=', appId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!row) return false;
    let value: string | null = null;
    try {
      value = sealer.open(row.sealed, envBinding(appId, key));
    } catch {
      return false;
    }
    if (value !== url) return false;
    await tx.deleteFrom('app_env').where('app_id', '=', appId).where('key', '=', key).execute();
    return true;
  });
}
