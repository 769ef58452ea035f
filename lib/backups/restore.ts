// Restoring a run into its source: the services that use the database or volume stop, the
// artifact (fetched once, authenticated) is written back, they start again; the outcome is
// recorded on the restore row, audited and published.
import type { Services } from '../http/handler.js';
import type { AppDatabaseTable, BackupRestoreTable, BackupRunTable } from '../db/schema.js';
import type { App } from '../apps/model.js';
import { newId } from '../crypto/random.js';
import { recordAudit } from '../audit/index.js';
import { guard, listAppContainers, volumeName, startContainer, stopContainer } from '../docker/index.js';
import { restoreDatabase } from '../databases/engines/index.js';
import { findDatabase } from '../databases/store.js';
import { restoreVolume } from './volumes.js';
import type { Source } from './config.js';
import { configOfRun, finishRestore, insertRestore } from './store.js';
import { iso, masterKey, reason, track } from './jobs.js';
import { openRunArtifact, plainDump, usable } from './run-artifact.js';
import type { VerifiedArtifact } from './verified.js';

type Actor = { id: string | null; name: string | null };

export async function startRestore(
  env: Services,
  app: App,
  run: BackupRunTable,
  actor: Actor,
): Promise<{
  id: string;
  run_id: string;
  status: string;
  error: null;
  started_at: string;
  finished_at: null;
}> {
  usable(run);
  masterKey(env);
  const id = newId(env.now());
  const row = {
    id,
    run_id: run.id,
    app_id: app.id,
    status: 'running',
    error: null,
    started_at: iso(env),
    finished_at: null,
  } satisfies BackupRestoreTable;
  await insertRestore(env.db, row);
  track(executeRestore(env, app, run, id, actor));
  return row;
}

async function executeRestore(
  env: Services,
  app: App,
  run: BackupRunTable,
  id: string,
  actor: Actor,
): Promise<void> {
  let status = 'succeeded';
  let error: string | null = null;
  const stopped: string[] = [];
  let copy: VerifiedArtifact | null = null;
  try {
    const cfg = await configOfRun(env.db, run);
    copy = await openRunArtifact(env, cfg, run);
    const artifact = copy;
    const source = JSON.parse(cfg.source) as Source;
    let dbRow: AppDatabaseTable | undefined;
    if (source.type === 'database') {
      dbRow = await findDatabase(env.db, source.database_id);
      if (!dbRow) throw new Error('the database no longer exists');
    }
    // The services that use it stop first: a database's clients are every service of the app
    // (they all get its URL); a volume's are the containers that mount it.
    const vol = source.type === 'volume' ? volumeName(app.name, source.volume) : null;
    for (const c of await listAppContainers(env.engine, app.name)) {
      if (c.state !== 'running') continue;
      if (vol) {
        const info = await guard(env.engine, () => env.engine.docker.getContainer(c.id).inspect());
        if (!(info.Mounts ?? []).some((m) => m.Name === vol)) continue;
      }
      await stopContainer(env.engine, c.id);
      stopped.push(c.id);
    }
    if (dbRow) await restoreDatabase(env, dbRow, async () => plainDump(artifact));
    else await restoreVolume(env, vol!, plainDump(artifact));
  } catch (e) {
    status = 'failed';
    error = reason(e);
  } finally {
    await copy?.close();
    for (const cid of stopped)
      await startContainer(env.engine, cid).catch((e) =>
        env.log.warn({ err: reason(e) }, 'restart after restore failed'),
      );
  }
  await finishRestore(env.db, id, { status, error, finished_at: iso(env) }).catch(() => {});
  await recordAudit(env.db, {
    route: 'POST /api/apps/{id}/backups/runs/{rid}/restore',
    actorId: actor.id,
    actor: actor.name,
    event: 'backup.restore_finished',
    target: app.id,
    outcome: status === 'succeeded' ? 200 : 500,
    detail: { restore: id, run: run.id, status, error },
  }).catch(() => {});
  env.bus.publish('backups', {
    type: 'restore_finished',
    app_id: app.id,
    run_id: run.id,
    restore_id: id,
    status,
    error,
  });
}

/**
 * Restores a database from a run's artifact and waits for it: recovery after an instance restore,
 * when no app container runs yet (so none is stopped).
 */
export async function restoreDatabaseFromRun(
  env: Services,
  row: AppDatabaseTable,
  run: BackupRunTable,
): Promise<void> {
  usable(run);
  const copy = await openRunArtifact(env, await configOfRun(env.db, run), run);
  try {
    await restoreDatabase(env, row, async () => plainDump(copy));
  } finally {
    await copy.close();
  }
}
