// At boot, what the process died during: runs end `interrupted` (their partial artifacts
// removed), restores end failed, and the spool and the scratch servers of interrupted verifies
// go. Missed schedule slots are the scheduler's first tick (scheduler.ts).
import type { Services } from '../http/handler.js';
import { destinationOf } from './destinations.js';
import { sweepScratchServers } from '../databases/engines/index.js';
import { failRunningRestores, findConfig, markRunEnded, runningRuns } from './store.js';
import * as instanceStore from './instance-store.js';
import { currentConfig } from './instance.js';
import { iso } from './jobs.js';
import { sweepSpool } from './verified.js';

const STOPPED_RUN = 'the control plane stopped during the run';

/** After `svc restore-instance`: the instance backup run the restored database was copied during. */
export type RestoredRun = { run_id: string; sha256: string; size_bytes: number };

/**
 * Runs the process died during end `interrupted`; their partial artifacts and scratch servers are
 * removed. After an instance restore (`restored`), a run the copy caught running may have finished
 * on the lost host: its artifact is left where it is.
 */
export async function recoverRuns(env: Services, restored?: RestoredRun): Promise<void> {
  for (const r of await runningRuns(env.db)) {
    const cfg = await findConfig(env.db, r.backup_id);
    if (cfg && r.artifact && !restored)
      await destinationOf(env, cfg)
        .remove(r.artifact)
        .catch(() => {});
    await markRunEnded(env.db, r.id, 'interrupted', STOPPED_RUN, iso(env));
  }
  await failRunningRestores(env.db, 'the control plane stopped during the restore', iso(env));
  await recoverInstanceRuns(env, restored);
  for (const store of [destinationOf(env, null)]) await store.sweepPartials?.().catch(() => {});
  await sweepSpool(env.config.dataDir).catch(() => {});
  const swept = await sweepScratchServers(env).catch((err) => {
    env.log.warn({ err: String(err) }, 'scratch servers of interrupted verifies could not be listed');
    return 0;
  });
  if (swept) env.log.info({ removed: swept }, 'removed scratch servers left by interrupted verifies');
}

/**
 * Instance backup runs the same way. `restored` is the run a restored database was copied during
 * (its row still says running): that one succeeded, and its artifact, the one the instance came
 * back from, stays.
 */
async function recoverInstanceRuns(env: Services, restored?: RestoredRun): Promise<void> {
  const stuck = await instanceStore.runningRuns(env.db);
  if (!stuck.length) return;
  const cfg = await currentConfig(env);
  for (const r of stuck) {
    if (restored && r.id === restored.run_id) {
      await instanceStore.markRunSucceeded(env.db, r.id, {
        sha256: restored.sha256,
        size_bytes: restored.size_bytes,
        finished_at: iso(env),
      });
      continue;
    }
    if (r.artifact)
      await destinationOf(env, cfg)
        .remove(r.artifact)
        .catch(() => {});
    await instanceStore.markRunEnded(env.db, r.id, 'interrupted', STOPPED_RUN, iso(env));
  }
}
