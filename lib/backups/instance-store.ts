// Every query of the instance backup, as plain functions: its one configuration row and its runs.
import type { Db } from '../db/index.js';
import type { InstanceBackupRunTable, InstanceBackupTable } from '../db/schema.js';
import { notFound } from '../http/errors.js';
import { runRowUpdates, slotClaimer } from './rows-store.js';

export const INSTANCE_BACKUP_ID = 'instance';

// The configuration.

/** The configuration as stored; undefined when none was ever saved. */
export function readConfig(db: Db): Promise<InstanceBackupTable | undefined> {
  return db.selectFrom('instance_backup').selectAll().where('id', '=', INSTANCE_BACKUP_ID).executeTakeFirst();
}

export async function saveConfig(db: Db, row: InstanceBackupTable): Promise<void> {
  await db
    .insertInto('instance_backup')
    .values(row)
    .onConflict((c) => c.column('id').doUpdateSet(row))
    .execute();
}

/** Claims a schedule slot once; false when another tick or process claimed it first. */
export const claimSlot = slotClaimer('instance_backup');

// Runs.

export async function insertRun(db: Db, row: InstanceBackupRunTable): Promise<void> {
  await db.insertInto('instance_backup_runs').values(row).execute();
}

/** The run, or 404. */
export async function getRun(db: Db, id: string): Promise<InstanceBackupRunTable> {
  const r = await db.selectFrom('instance_backup_runs').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound('No such instance backup run');
  return r;
}

/** Runs, newest first, at most `limit`. */
export function listRuns(db: Db, limit: number): Promise<InstanceBackupRunTable[]> {
  return db
    .selectFrom('instance_backup_runs')
    .selectAll()
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export function runningRuns(db: Db): Promise<InstanceBackupRunTable[]> {
  return db.selectFrom('instance_backup_runs').selectAll().where('status', '=', 'running').execute();
}

export async function setNotes(db: Db, id: string, notes: string): Promise<void> {
  await db.updateTable('instance_backup_runs').set({ notes }).where('id', '=', id).execute();
}

export const { markRunSucceeded, markRunEnded, markArtifactRemoved, setVerdict } =
  runRowUpdates('instance_backup_runs');

export function keptRuns(db: Db): Promise<InstanceBackupRunTable[]> {
  return db
    .selectFrom('instance_backup_runs')
    .selectAll()
    .where('status', '=', 'succeeded')
    .where('artifact_removed', '=', 0)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export async function hasRunningRun(db: Db): Promise<boolean> {
  return (
    (await db
      .selectFrom('instance_backup_runs')
      .select('id')
      .where('status', '=', 'running')
      .executeTakeFirst()) !== undefined
  );
}
