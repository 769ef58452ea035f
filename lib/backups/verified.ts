// An artifact is fetched once and every use reads that one copy. Checking one download and then
// using a second would let a destination answer the second request with other bytes (another
// app's artifact under the same master key, say); so a remote artifact is spooled to a private
// file (0600 in a 0700 directory), a local one is held open, its sha256 and every record's tag
// and binding are checked on that copy, and restore, download and verify decrypt that same copy.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  decryptStream,
  ArtifactAuthError,
  ArtifactBindingError,
  type AnyBinding,
  type ArtifactBinding,
  type BindingCheck,
} from './crypto.js';
import type { ArtifactStore } from './artifact.js';

const SPOOL_PREFIX = 'backup-';
const READ = 64 * 1024;
const FAILED = 'the artifact failed authentication';

// Positional reads and writes on the one handle: an fs stream would close the handle when it is
// destroyed, and a reader that stops early must not take the copy away from the others.
function readFrom(fh: FileHandle): Readable {
  let pos = 0;
  return new Readable({
    read() {
      fh.read(Buffer.allocUnsafe(READ), 0, READ, pos).then(
        ({ bytesRead, buffer }) => {
          pos += bytesRead;
          this.push(bytesRead ? buffer.subarray(0, bytesRead) : null);
        },
        (e: Error) => this.destroy(e),
      );
    },
  });
}

function writeTo(fh: FileHandle): Writable {
  let pos = 0;
  return new Writable({
    write(chunk: Buffer, _e, cb) {
      void (async () => {
        for (let at = 0; at < chunk.length;)
          at += (await fh.write(chunk, at, chunk.length - at, pos + at)).bytesWritten;
        pos += chunk.length;
      })().then(() => cb(), cb);
    },
  });
}

export interface RunArtifact {
  id: string;
  app_id: string;
  backup_id: string;
  artifact: string | null;
  sha256: string | null;
}

export interface VerifiedArtifact {
  /** The decrypted, still compressed dump of the checked copy; may be called more than once. */
  plain(): Readable;
  /** Closes the copy and removes a spooled one; safe to call more than once. */
  close(): Promise<void>;
}

export const bindingOf = (run: RunArtifact): ArtifactBinding => ({
  app_id: run.app_id,
  backup_id: run.backup_id,
  run_id: run.id,
});

/** Where remote artifacts are spooled while they are used. */
export const spoolRoot = (dataDir: string) => join(dataDir, 'spool');

/** Spools left by a process that died while using one. */
export async function sweepSpool(dataDir: string): Promise<void> {
  const root = spoolRoot(dataDir);
  for (const d of await readdir(root).catch(() => [] as string[])) {
    if (d.startsWith(SPOOL_PREFIX)) await rm(join(root, d), { recursive: true, force: true });
  }
}

async function spool(
  store: ArtifactStore,
  key: string,
  dataDir: string,
): Promise<{ fh: FileHandle; dir: string }> {
  const root = spoolRoot(dataDir);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(root, SPOOL_PREFIX));
  let fh: FileHandle | null = null;
  try {
    fh = await open(join(dir, 'artifact'), 'wx+', 0o600);
    await pipeline(await store.get(key), writeTo(fh));
    return { fh, dir };
  } catch (e) {
    await fh?.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

/**
 * The run's artifact, fetched once and authenticated (sha256 against the run's record, every
 * record's tag, the binding to this app, config and run). Nothing of it is usable before that.
 */
export async function fetchVerified(
  store: ArtifactStore,
  run: RunArtifact,
  master: Buffer,
  dataDir: string,
): Promise<VerifiedArtifact> {
  if (!run.artifact || !run.sha256) throw new ArtifactAuthError('the run recorded no artifact');
  return openVerified(store, run.artifact, run.sha256, bindingOf(run), master, dataDir);
}

/**
 * `key` fetched once and authenticated against `expected` (a binding, or a check of the one it
 * carries). `sha256` null only where no record of the run is at hand (restoring a lost instance:
 * the record is in the database being restored); the tags then authenticate it alone.
 */
export async function openVerified(
  store: ArtifactStore,
  key: string,
  sha256: string | null,
  expected: AnyBinding | BindingCheck,
  master: Buffer,
  dataDir: string,
): Promise<VerifiedArtifact & { sha256: string; size_bytes: number }> {
  let fh: FileHandle;
  let dir: string | null = null;
  const path = store.localPath?.(key);
  if (path) fh = await open(path, 'r');
  else ({ fh, dir } = await spool(store, key, dataDir));
  let closed: Promise<void> | null = null;
  const copy = {
    sha256: '',
    size_bytes: 0,
    plain() {
      const out = decryptStream(master, expected);
      pipeline(readFrom(fh), out).catch((e) => out.destroy(e));
      return out;
    },
    close() {
      return (closed ??= (async () => {
        await fh.close().catch(() => {});
        if (dir) await rm(dir, { recursive: true, force: true });
      })());
    },
  };
  try {
    const hash = createHash('sha256');
    const tee = new Transform({
      transform(c: Buffer, _e, cb) {
        hash.update(c);
        copy.size_bytes += c.length;
        cb(null, c);
      },
    });
    try {
      await pipeline(
        readFrom(fh),
        tee,
        decryptStream(master, expected),
        new Writable({ write: (_c, _e, cb) => cb() }),
      );
    } catch (e) {
      if (!(e instanceof ArtifactAuthError) || e instanceof ArtifactBindingError) throw e;
      throw new ArtifactAuthError(`${FAILED}: ${e.message}`);
    }
    copy.sha256 = hash.digest('hex');
    if (sha256 !== null && copy.sha256 !== sha256)
      throw new ArtifactAuthError(`${FAILED}: its sha256 does not match the record`);
    return copy;
  } catch (e) {
    await copy.close();
    throw e;
  }
}
