// What removes artifacts: retention after a successful run (the newest keep_last stay), and an
// operator removing one run's artifact. The run rows stay, marked removed; download and restore
// then answer 410.
import type { Services } from '../http/handler.js';
import type {
  BackupConfigTable,
  BackupRunTable,
  InstanceBackupRunTable,
  InstanceBackupTable,
} from '../db/schema.js';
import { conflict, HttpError } from '../http/errors.js';
import { destinationOf, type ArtifactStore } from './destinations.js';
import { getConfig, getRun, keptRuns, markArtifactRemoved } from './store.js';
import * as instanceStore from './instance-store.js';
import { currentConfig } from './instance.js';
import { reason } from './jobs.js';

/**
 * Of the successful runs with an artifact (newest first), those past `keepLast` lose it.
 * A removal that fails is logged and tried again after the next success.
 */
async function removeBeyond<R extends { id: string; artifact: string | null }>(
  env: Services,
  newestFirst: R[],
  keepLast: number,
  store: ArtifactStore,
  markRemoved: (id: string) => Promise<unknown>,
  what: string,
): Promise<void> {
  for (const r of newestFirst.slice(keepLast)) {
    try {
      await store.remove(r.artifact!);
      await markRemoved(r.id);
    } catch (e) {
      env.log.warn({ run: r.id, err: reason(e) }, `retention could not remove ${what}`);
    }
  }
}

/** keep_last newest successful artifacts of cfg stay; older ones go. Called only after a success. */
export async function applyRetention(
  env: Services,
  cfg: BackupConfigTable,
  store: ArtifactStore,
): Promise<void> {
  await removeBeyond(
    env,
    await keptRuns(env.db, cfg.id),
    cfg.keep_last,
    store,
    (id) => markArtifactRemoved(env.db, id),
    'an artifact',
  );
}

/** The same for the instance backup. */
export async function applyInstanceRetention(
  env: Services,
  cfg: InstanceBackupTable,
  store: ArtifactStore,
): Promise<void> {
  await removeBeyond(
    env,
    await instanceStore.keptRuns(env.db),
    cfg.keep_last,
    store,
    (id) => instanceStore.markArtifactRemoved(env.db, id),
    'an instance backup',
  );
}

/**
 * Removes one run's artifact from its destination; the run row stays, marked removed, as
 * retention leaves it (download and restore then answer 410). Nothing to remove is not an error.
 */
export async function removeRunArtifact(
  env: Services,
  appId: string,
  runId: string,
): Promise<BackupRunTable> {
  const run = await getRun(env.db, appId, runId);
  if (run.status === 'running') throw conflict('The run is still running: its artifact is not complete yet');
  if (!run.artifact || run.artifact_removed === 1) return run;
  const cfg = await getConfig(env.db, appId, run.backup_id);
  try {
    await destinationOf(env, cfg).remove(run.artifact);
  } catch (e) {
    // The row stays as it was: the artifact may still be there, and a retry removes it.
    const why = (e instanceof Error ? e.message : String(e)).slice(0, 300);
    throw new HttpError('service_unavailable', `The artifact could not be removed: ${why}`);
  }
  await markArtifactRemoved(env.db, run.id);
  return { ...run, artifact_removed: 1 };
}

/** Removes one instance backup run's artifact; the run stays, marked removed. */
export async function removeInstanceRunArtifact(
  env: Services,
  runId: string,
): Promise<InstanceBackupRunTable> {
  const run = await instanceStore.getRun(env.db, runId);
  if (run.status === 'running') throw conflict('The run is still running: its artifact is not complete yet');
  if (!run.artifact || run.artifact_removed === 1) return run;
  try {
    await destinationOf(env, await currentConfig(env)).remove(run.artifact);
  } catch (e) {
    throw new HttpError(
      'service_unavailable',
      `The artifact could not be removed: ${reason(e).slice(0, 300)}`,
    );
  }
  await instanceStore.markArtifactRemoved(env.db, run.id);
  return { ...run, artifact_removed: 1 };
}
