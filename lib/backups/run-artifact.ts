// A finished run's artifact, as restore, verify and download use it: only a run that succeeded
// and still has its artifact, fetched once from its config's destination and authenticated.
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Services } from '../http/handler.js';
import type { BackupConfigTable, BackupRunTable } from '../db/schema.js';
import { conflict, HttpError } from '../http/errors.js';
import { destinationOf } from './destinations.js';
import { masterKey } from './jobs.js';
import { fetchVerified, type VerifiedArtifact } from './verified.js';

/** Refuses a run with no artifact to use (409 still running or failed, 410 removed). */
export function usable(run: { status: string; artifact_removed: number }): void {
  if (run.status !== 'succeeded')
    throw conflict(
      `The run ${run.status === 'running' ? 'is still running' : 'did not succeed'}: there is no artifact`,
    );
  if (run.artifact_removed === 1) throw new HttpError('gone', 'The artifact of this run was removed');
}

/** The run's artifact from cfg's destination, fetched once and authenticated; every use reads this one copy. */
export function openRunArtifact(
  env: Services,
  cfg: BackupConfigTable,
  run: BackupRunTable,
): Promise<VerifiedArtifact> {
  return fetchVerified(destinationOf(env, cfg), run, masterKey(env), env.config.dataDir);
}

/** The dump as the source wrote it: the copy decrypted and decompressed. */
export function plainDump(copy: VerifiedArtifact): Readable {
  const gunzip = createGunzip();
  pipeline(copy.plain(), gunzip).catch((e) => gunzip.destroy(e));
  return gunzip;
}
