// Every query of app backups, as plain functions over the typed database: configs, runs,
// restores, and the app rows a backup reads (an app's name, the live apps). The jobs
// (run.ts, restore.ts, verify.ts, ...) call these by name and build no query of their own.
import type { Db } from '../db/index.js';
import type {
  AppDatabaseTable,
  BackupConfigTable,
  BackupRestoreTable,
  BackupRunTable,
} from '../db/schema.js';
import { notFound } from '../http/errors.js';
import { runRowUpdates, slotClaimer } from './rows-store.js';

// Configs.

export async function insertConfig(db: Db, row: BackupConfigTable): Promise<void> {
  await db.insertInto('backup_configs').values(row).execute();
}

/** The config of an app, or 404. */
export async function getConfig(db: Db, appId: string, id: string): Promise<BackupConfigTable> {
  const r = await db
    .selectFrom('backup_configs')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw notFound('No such backup config');
  return r;
}

/** The config a run belongs to; undefined when it was deleted since. */
export function findConfig(db: Db, id: string): Promise<BackupConfigTable | undefined> {
  return db.selectFrom('backup_configs').selectAll().where('id', '=', id).executeTakeFirst();
}

export function configOfRun(db: Db, run: Pick<BackupRunTable, 'backup_id'>): Promise<BackupConfigTable> {
  return db
    .selectFrom('backup_configs')
    .selectAll()
    .where('id', '=', run.backup_id)
    .executeTakeFirstOrThrow();
}

/** Every config (of one app, or of all when appId is null), oldest first. */
export function listConfigRows(db: Db, appId: string | null): Promise<BackupConfigTable[]> {
  let q = db.selectFrom('backup_configs').selectAll().orderBy('created_at');
  if (appId) q = q.where('app_id', '=', appId);
  return q.execute();
}

export function enabledConfigs(db: Db): Promise<BackupConfigTable[]> {
  return db.selectFrom('backup_configs').selectAll().where('enabled', '=', 1).execute();
}

export async function updateConfigRow(db: Db, id: string, patch: Partial<BackupConfigTable>): Promise<void> {
  await db.updateTable('backup_configs').set(patch).where('id', '=', id).execute();
}

/** Deletes the config; its run rows go with it (foreign key). */
export async function deleteConfigRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('backup_configs').where('id', '=', id).execute();
}

/** Claims a schedule slot once; false when another tick or process claimed it first. */
export const claimSlot = slotClaimer('backup_configs');

// Runs.

export async function insertRun(db: Db, row: BackupRunTable): Promise<void> {
  await db.insertInto('backup_runs').values(row).execute();
}

/** The run of an app, or 404. */
export async function getRun(db: Db, appId: string, runId: string): Promise<BackupRunTable> {
  const r = await db
    .selectFrom('backup_runs')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', runId)
    .executeTakeFirst();
  if (!r) throw notFound('No such backup run');
  return r;
}

export async function hasRunningRun(db: Db, backupId: string): Promise<boolean> {
  return (
    (await db
      .selectFrom('backup_runs')
      .select('id')
      .where('backup_id', '=', backupId)
      .where('status', '=', 'running')
      .executeTakeFirst()) !== undefined
  );
}

/** Every run the database says is running (at boot: the ones the process died during). */
export function runningRuns(db: Db): Promise<BackupRunTable[]> {
  return db.selectFrom('backup_runs').selectAll().where('status', '=', 'running').execute();
}

export const { markRunSucceeded, markRunEnded, markArtifactRemoved, setVerdict } =
  runRowUpdates('backup_runs');

/** The successful runs of a config whose artifact is still stored, newest first. */
export function keptRuns(db: Db, backupId: string): Promise<BackupRunTable[]> {
  return db
    .selectFrom('backup_runs')
    .selectAll()
    .where('backup_id', '=', backupId)
    .where('status', '=', 'succeeded')
    .where('artifact_removed', '=', 0)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** The newest successful runs (artifact kept) of the configs whose source is this database. */
export async function keptRunsOfDatabase(
  db: Db,
  row: Pick<AppDatabaseTable, 'id' | 'app_id'>,
  limit: number,
): Promise<BackupRunTable[]> {
  const configs = await db
    .selectFrom('backup_configs')
    .select(['id', 'source'])
    .where('app_id', '=', row.app_id)
    .execute();
  const ids = configs
    .filter((c) => (JSON.parse(c.source) as { database_id?: string }).database_id === row.id)
    .map((c) => c.id);
  if (!ids.length) return [];
  return db
    .selectFrom('backup_runs')
    .selectAll()
    .where('backup_id', 'in', ids)
    .where('status', '=', 'succeeded')
    .where('artifact_removed', '=', 0)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** A config's runs, newest first, at most 500. */
export function listRunRows(db: Db, backupId: string): Promise<BackupRunTable[]> {
  return db
    .selectFrom('backup_runs')
    .selectAll()
    .where('backup_id', '=', backupId)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(500)
    .execute();
}

export function lastRun(db: Db, backupId: string): Promise<BackupRunTable | undefined> {
  return db
    .selectFrom('backup_runs')
    .selectAll()
    .where('backup_id', '=', backupId)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The artifacts a config's runs recorded, removed or not. */
export function artifactsOf(
  db: Db,
  backupId: string,
): Promise<Array<Pick<BackupRunTable, 'artifact' | 'artifact_removed'>>> {
  return db
    .selectFrom('backup_runs')
    .select(['artifact', 'artifact_removed'])
    .where('backup_id', '=', backupId)
    .execute();
}

/** Failed and interrupted runs started since `since`, newest first, at most 500. */
export function failedRunsSince(db: Db, since: string): Promise<BackupRunTable[]> {
  return db
    .selectFrom('backup_runs')
    .selectAll()
    .where('status', 'in', ['failed', 'interrupted'])
    .where('started_at', '>=', since)
    .orderBy('started_at', 'desc')
    .limit(500)
    .execute();
}

// Restores.

export async function insertRestore(db: Db, row: BackupRestoreTable): Promise<void> {
  await db.insertInto('backup_restores').values(row).execute();
}

/** The restore of an app, or 404. */
export async function getRestore(db: Db, appId: string, id: string): Promise<BackupRestoreTable> {
  const r = await db
    .selectFrom('backup_restores')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw notFound('No such restore');
  return r;
}

export async function finishRestore(
  db: Db,
  id: string,
  done: { status: string; error: string | null; finished_at: string },
): Promise<void> {
  await db.updateTable('backup_restores').set(done).where('id', '=', id).execute();
}

/** Restores the process died during end failed. */
export async function failRunningRestores(db: Db, error: string, finishedAt: string): Promise<void> {
  await db
    .updateTable('backup_restores')
    .set({ status: 'failed', error, finished_at: finishedAt })
    .where('status', '=', 'running')
    .execute();
}

// Apps, as a backup reads them (a database's rows are lib/databases/store.ts).

export async function appName(db: Db, appId: string): Promise<string> {
  return (await db.selectFrom('apps').select('name').where('id', '=', appId).executeTakeFirstOrThrow()).name;
}

/** The apps not being deleted, by name. */
export async function liveAppIds(db: Db): Promise<Map<string, string>> {
  const apps = await db.selectFrom('apps').select(['id', 'name']).where('deleting_at', 'is', null).execute();
  return new Map(apps.map((a) => [a.name, a.id]));
}
