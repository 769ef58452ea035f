// How a backup run's row ends, the same for an app's backups (`backup_runs`) and the instance's
// (`instance_backup_runs`): both tables share these columns and their meaning.
import type { Db } from '../db/index.js';

type RunTable = 'backup_runs' | 'instance_backup_runs';

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
