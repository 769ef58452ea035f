// Verifying a run: its artifact, fetched once and authenticated, is restored into a scratch
// server (a database) or read through as a tar (a volume). The verdict is recorded on the run;
// a run that does not restore notifies as a failed backup.
import type { Services } from '../http/handler.js';
import type { BackupRunTable } from '../db/schema.js';
import { verifyDatabase } from '../databases/engines/index.js';
import { findDatabase } from '../databases/store.js';
import { checkVolumeArchive } from './volumes.js';
import type { Source } from './config.js';
import { configOfRun, setVerdict } from './store.js';
import { iso, masterKey, reason, track } from './jobs.js';
import { openRunArtifact, plainDump, usable } from './run-artifact.js';
import type { VerifiedArtifact } from './verified.js';

export async function startVerify(env: Services, run: BackupRunTable): Promise<void> {
  usable(run);
  masterKey(env);
  // A new verdict replaces the old one: until it is in, the run reads as not verified.
  await setVerdict(env.db, run.id, { verified_at: null, verify_error: null });
  track(verifyRun(env, run));
}

/** Verifies a stored run; the outcome is recorded on the run, never thrown. */
export async function verifyRun(env: Services, run: BackupRunTable): Promise<void> {
  let copy: VerifiedArtifact | null = null;
  try {
    const cfg = await configOfRun(env.db, run);
    copy = await openRunArtifact(env, cfg, run);
    const artifact = copy;
    const source = JSON.parse(cfg.source) as Source;
    if (source.type === 'database') {
      const row = await findDatabase(env.db, source.database_id);
      if (!row) throw new Error('the database no longer exists');
      await verifyDatabase(env, row, async () => plainDump(artifact));
    } else {
      await checkVolumeArchive(plainDump(artifact));
    }
    await setVerdict(env.db, run.id, { verified_at: iso(env), verify_error: null });
  } catch (e) {
    const why = reason(e);
    await setVerdict(env.db, run.id, { verified_at: null, verify_error: why }).catch(() => {});
    // The contract has no event of its own for this: an artifact that does not restore is a
    // failed backup as far as the operator is concerned, so it notifies as one.
    env.log.warn({ run: run.id, err: why }, 'backup verification failed');
    env.bus.publish('backups', {
      type: 'backup_failed',
      stage: 'verify',
      app_id: run.app_id,
      backup_id: run.backup_id,
      run_id: run.id,
      error: `verification failed: ${why}`,
    });
  } finally {
    await copy?.close();
  }
}
