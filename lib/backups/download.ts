// Downloading a run: the decrypted, still gzip-compressed dump, streamed only after the whole
// artifact authenticated (a remote one is spooled first; the spool goes with the stream).
import type { Readable } from 'node:stream';
import type { Services } from '../http/handler.js';
import type { BackupRunTable } from '../db/schema.js';
import { conflict } from '../http/errors.js';
import { ArtifactAuthError } from './crypto.js';
import { configOfRun } from './store.js';
import { openRunArtifact, usable } from './run-artifact.js';
import type { VerifiedArtifact } from './verified.js';

export async function openDownload(env: Services, run: BackupRunTable): Promise<Readable> {
  usable(run);
  const cfg = await configOfRun(env.db, run);
  let copy: VerifiedArtifact;
  try {
    copy = await openRunArtifact(env, cfg, run);
  } catch (e) {
    if (e instanceof ArtifactAuthError) throw conflict(`Refused: ${e.message}`);
    throw e;
  }
  const plain = copy.plain();
  // Ended, failed or abandoned by the client: the spooled copy goes with the stream.
  plain.once('close', () => void copy.close());
  return plain;
}
