// `svc restore-instance`: puts an instance backup back on a host whose service is stopped. The
// artifact is fetched once and authenticated with the given master key (it must be an instance
// backup); the database copy must pass SQLite's integrity check and its sealed secrets must open
// with that key before anything is put in place. It writes the database (0600), Caddy's storage
// and the recovery marker the next start acts on (lib/instance/recovery.ts), nothing else.
import { cp, mkdir, mkdtemp, rename, rm, writeFile, chmod } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { ArtifactStore } from '../backups/artifact.js';
import { s3Store, type S3Settings } from '../backups/s3.js';
import { unpackVerified } from '../backups/instance-verify.js';
import { openDb } from '../db/index.js';
import { createSealer } from '../crypto/seal.js';
import { hasSealedData, unopenableSealedData } from './sealed-rows.js';
import { RECOVERY_MARKER, type RecoveryMarker } from './recovery.js';

export class RestoreRefused extends Error {}

export interface RestoreOptions {
  source: string;
  key: Buffer;
  dataDir: string;
  caddyStorage: string;
  force: boolean;
  s3?: Omit<S3Settings, 'bucket' | 'prefix'>;
  now?: number;
}

/** A single file as a store: read in place (never spooled), never written. */
function fileStore(path: string): ArtifactStore {
  const refuse = async () => {
    throw new Error('read only');
  };
  return { put: refuse, remove: refuse, get: refuse, localPath: () => path };
}

function storeOf(opts: RestoreOptions): { store: ArtifactStore; key: string; where: string } {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/(.+)$/.exec(opts.source);
  if (m) {
    if (!opts.s3)
      throw new RestoreRefused(
        'an s3:// source needs --s3-endpoint, --s3-access-key-id and --s3-secret-access-key-env',
      );
    const settings: S3Settings = { ...opts.s3, bucket: m[1]!, prefix: '' };
    return { store: s3Store(async () => settings), key: m[2]!, where: opts.source };
  }
  if (/^[a-z0-9]+:\/\//i.test(opts.source))
    throw new RestoreRefused(
      `unsupported source ${opts.source.slice(0, 100)}: a file path or s3://bucket/key`,
    );
  const path = resolve(opts.source);
  if (!existsSync(path)) throw new RestoreRefused(`no such file: ${path}`);
  return { store: fileStore(path), key: basename(path), where: path };
}

export async function restoreInstance(opts: RestoreOptions): Promise<string[]> {
  const out: string[] = [];
  const dbFile = join(opts.dataDir, 'svc.db');
  if (existsSync(dbFile) && !opts.force)
    throw new RestoreRefused(
      `${dbFile} already exists: this data directory holds an instance; pass --force to keep it aside and restore over it`,
    );
  const { store, key, where } = storeOf(opts);
  await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  const staging = await mkdtemp(join(opts.dataDir, '.restore-'));
  try {
    let found: { instance_id: string; run_id: string } | null = null;
    let got;
    try {
      got = await unpackVerified(store, key, null, (b) => (found = b), opts.key, opts.dataDir, staging);
    } catch (e) {
      throw new RestoreRefused(
        `${where} was refused: ${(e as Error).message}. Nothing was restored (a wrong --key fails here too)`,
      );
    }
    const bound = found as { instance_id: string; run_id: string } | null;
    if (!bound || bound.instance_id !== got.manifest.instance_id || bound.run_id !== got.manifest.run_id)
      throw new RestoreRefused('the manifest does not match the artifact binding');
    out.push(
      `authenticated ${where}: instance ${bound.instance_id}, backup run ${bound.run_id} of ${got.manifest.created_at} (svc ${got.manifest.version}), sha256 ${got.sha256}`,
    );

    // The secrets of the copy must open with this key; checked on the staged copy, before it is used.
    const db = openDb(staging);
    try {
      const sealer = createSealer(opts.key);
      if (await hasSealedData(db)) {
        const failed = await unopenableSealedData(db, sealer);
        if (failed.length)
          throw new RestoreRefused(
            `the restored database's secrets do not open with --key (${failed.slice(0, 5).join(', ')}); nothing was restored`,
          );
        out.push("checked: the database's sealed secrets open with this key");
      } else {
        out.push('the database holds no sealed secret to check the key against');
      }
    } finally {
      await db.destroy();
    }

    if (existsSync(dbFile)) {
      const stamp = new Date(opts.now ?? Date.now()).toISOString().replace(/[:.]/g, '-');
      const kept = `${dbFile}.replaced-${stamp}`;
      for (const suffix of ['', '-wal', '-shm'])
        if (existsSync(dbFile + suffix)) await rename(dbFile + suffix, kept + suffix);
      out.push(`kept the database that was there as ${kept}`);
    }
    await rename(join(staging, 'svc.db'), dbFile);
    await chmod(dbFile, 0o600);
    out.push(`restored the control database to ${dbFile}`);

    if (got.caddy) {
      try {
        await mkdir(opts.caddyStorage, { recursive: true, mode: 0o700 });
        await cp(join(staging, 'caddy'), opts.caddyStorage, { recursive: true, force: true });
        out.push(
          `restored Caddy's certificate storage to ${opts.caddyStorage} (make it owned by the user Caddy runs as, e.g. chown -R caddy:caddy ${dirname(opts.caddyStorage)})`,
        );
      } catch (e) {
        out.push(
          `could NOT restore Caddy's certificate storage to ${opts.caddyStorage}: ${(e as Error).message}; Caddy obtains new certificates`,
        );
      }
    } else {
      out.push(
        `the backup holds no certificate storage${got.manifest.notes ? ` (${got.manifest.notes})` : ''}: Caddy obtains new certificates`,
      );
    }

    const marker: RecoveryMarker = {
      instance_id: bound.instance_id,
      run_id: bound.run_id,
      sha256: got.sha256,
      size_bytes: got.size_bytes,
      restored_at: new Date(opts.now ?? Date.now()).toISOString(),
    };
    await writeFile(join(opts.dataDir, RECOVERY_MARKER), JSON.stringify(marker) + '\n', { mode: 0o600 });
    out.push(
      'at its next start the service brings back every app and every database whose volume is missing (GET /api/instance/recovery)',
    );
    out.push('start it with this same master key (SVC_MASTER_KEY); the backup does not contain it');
    return out;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
