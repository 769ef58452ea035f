// The queries written once for an app's backups and the instance's, whose tables share columns
// and their meaning: how a run's row ends (`backup_runs`, `instance_backup_runs`), and claiming a
// schedule slot (`backup_configs`, `instance_backup`). store.ts and instance-store.ts bind them.
import type { Db } from '../db/index.js';

type RunTable = 'backup_runs' | 'instance_backup_runs';
type ConfigTable = 'backup_configs' | 'instance_backup';

/**
 * Claims a schedule slot of a config of `table`: one conditional UPDATE from the slot the caller
 * read, so a slot is claimed once however many ticks (or processes) see it. False when another
 * claimed it first.
 */
export function slotClaimer(table: ConfigTable) {
  return async (
    db: Db,
    cfg: { id: string; last_scheduled_at: string | null },
    slot: string,
  ): Promise<boolean> => {
    // Both tables have these columns alike; Kysely cannot type an update over a union of tables.
    const claimed = await db
      .updateTable(table as 'backup_configs')
      .set({ last_scheduled_at: slot })
      .where('id', '=', cfg.id)
      .where((eb) =>
        cfg.last_scheduled_at === null
          ? eb('last_scheduled_at', 'is', null)
          : eb('last_scheduled_at', '=', cfg.last_scheduled_at),
      )
      .executeTakeFirst();
    return Number(claimed.numUpdatedRows) === 1;
  };
}

interface RunEnd {
  status?: 'succeeded' | 'failed' | 'interrupted';
  size_bytes?: number;
  sha256?: string;
  finished_at?: string;
  error?: string;
  artifact_removed?: number;
  verified_at?: string | null;
  verify_error?: string | null;
}

/** The row updates of one run table, bound to its name. */
export function runRowUpdates(table: RunTable) {
  const update = async (db: Db, id: string, set: RunEnd) => {
    // The two tables have these columns alike; Kysely cannot type an update over a union of tables.
    await db
      .updateTable(table as 'backup_runs')
      .set(set)
      .where('id', '=', id)
      .execute();
  };
  return {
    markRunSucceeded: (
      db: Db,
      id: string,
      done: { size_bytes: number; sha256: string; finished_at: string },
    ) => update(db, id, { status: 'succeeded', ...done }),
    /** A failed or interrupted run: its artifact is gone (removed, or never complete). */
    markRunEnded: (db: Db, id: string, status: 'failed' | 'interrupted', error: string, finishedAt: string) =>
      update(db, id, { status, error, finished_at: finishedAt, artifact_removed: 1 }),
    markArtifactRemoved: (db: Db, id: string) => update(db, id, { artifact_removed: 1 }),
    /** A verification's verdict: verified_at when it restored, verify_error when not; both null while one runs. */
    setVerdict: (db: Db, id: string, verdict: { verified_at: string | null; verify_error: string | null }) =>
      update(db, id, verdict),
  };
}
