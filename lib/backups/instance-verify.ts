// Verifying an instance backup run: the stored artifact is fetched once, its tags and binding
// checked, unpacked into a scratch directory, and the database copy must pass SQLite's integrity
// check. The same unpacking serves `svc restore-instance` (lib/instance/restore.ts).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Services } from '../http/handler.js';
import type { InstanceBackupRunTable } from '../db/schema.js';
import { ArtifactBindingError, type InstanceBinding } from './crypto.js';
import { destinationOf } from './destinations.js';
import type { ArtifactStore } from './artifact.js';
import { openVerified, spoolRoot, type VerifiedArtifact } from './verified.js';
import { checkDatabase, unpackInstance, type Manifest } from './instance-archive.js';
import { getRun, setVerdict } from './instance-store.js';
import { currentConfig, instanceId } from './instance.js';
import { iso, masterKey, reason, track } from './jobs.js';
import { plainDump, usable } from './run-artifact.js';

/**
 * Opens a stored instance artifact once, authenticates it (sha256 when recorded, tags, binding)
 * and unpacks it into `dir`; the database copy must pass SQLite's integrity check.
 */
export async function unpackVerified(
  store: ArtifactStore,
  key: string,
  sha256: string | null,
  expected: InstanceBinding | ((found: InstanceBinding) => void),
  master: Buffer,
  dataDir: string,
  dir: string,
): Promise<{ manifest: Manifest; caddy: boolean; sha256: string; size_bytes: number }> {
  const check =
    typeof expected === 'function'
      ? (found: unknown) => {
          if (!found || !(found as InstanceBinding).instance_id)
            throw new ArtifactBindingError('the artifact is not an instance backup');
          expected(found as InstanceBinding);
        }
      : expected;
  let copy: (VerifiedArtifact & { sha256: string; size_bytes: number }) | null = null;
  try {
    copy = await openVerified(store, key, sha256, check, master, dataDir);
    const out = await unpackInstance(plainDump(copy), dir);
    const bound = typeof expected === 'function' ? null : expected;
    if (bound && (out.manifest.instance_id !== bound.instance_id || out.manifest.run_id !== bound.run_id))
      throw new Error('the manifest names another instance or run');
    checkDatabase(join(dir, 'svc.db'));
    return { ...out, sha256: copy.sha256, size_bytes: copy.size_bytes };
  } finally {
    await copy?.close();
  }
}

/** Verifies a stored run: a failure is recorded on the run (verify_error), never thrown. */
export async function verifyInstanceRun(env: Services, run: InstanceBackupRunTable): Promise<void> {
  const scratch = join(spoolRoot(env.config.dataDir), `backup-verify-${run.id}`);
  try {
    const cfg = await currentConfig(env);
    await rm(scratch, { recursive: true, force: true });
    await unpackVerified(
      destinationOf(env, cfg),
      run.artifact!,
      run.sha256,
      { instance_id: await instanceId(env), run_id: run.id },
      masterKey(env),
      env.config.dataDir,
      scratch,
    );
    await setVerdict(env.db, run.id, { verified_at: iso(env), verify_error: null });
  } catch (e) {
    const why = reason(e);
    await setVerdict(env.db, run.id, { verified_at: null, verify_error: why });
    env.log.warn({ run: run.id, err: why }, 'instance backup verification failed');
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Starts a verification of a run in the background (the run's verified_at or verify_error says how it went). */
export async function startInstanceVerify(env: Services, runId: string): Promise<void> {
  const run = await getRun(env.db, runId);
  usable(run);
  masterKey(env);
  await setVerdict(env.db, run.id, { verified_at: null, verify_error: null });
  track(verifyInstanceRun(env, run));
}
