// One run of the instance backup: a consistent copy of the control database and Caddy's data
// directory is staged, packed (instance-archive.ts) and sent through the same gzip and artifact
// encryption as app backups, bound to this instance and run; then retention, then a verification
// of the stored artifact (instance-verify.ts).
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, cp, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Services } from '../http/handler.js';
import type { InstanceBackupRunTable, InstanceBackupTable } from '../db/schema.js';
import { dialectOf, rawConnection } from '../db/index.js';
import { newId } from '../crypto/random.js';
import { conflict } from '../http/errors.js';
import { productVersion } from '../version.js';
import { encryptStream, type InstanceBinding } from './crypto.js';
import { destinationOf } from './destinations.js';
import type { ArtifactStore } from './artifact.js';
import { spoolRoot } from './verified.js';
import { ARCHIVE_FORMAT, packInstance, type Manifest } from './instance-archive.js';
import { hasRunningRun, insertRun, markRunEnded, markRunSucceeded, setNotes } from './instance-store.js';
import { currentConfig, instanceId } from './instance.js';
import { iso, masterKey, reason, track } from './jobs.js';
import { applyInstanceRetention } from './retention.js';
import { verifyInstanceRun } from './instance-verify.js';

let active = false;

/** Starts a run in the background; one at a time. */
export async function startInstanceRun(
  env: Services,
  trigger: 'manual' | 'schedule',
): Promise<InstanceBackupRunTable> {
  masterKey(env);
  // The archive's database is a file copy made by SQLite's online backup, and a restore puts a
  // file back: neither exists for a PostgreSQL server, whose own tools back it up.
  if (dialectOf(env.db) === 'postgres')
    throw conflict(
      'The control database is on PostgreSQL (SVC_DATABASE_URL): back it up with pg_dump (docs/operating.md); the instance backup holds the SQLite file only',
    );
  const running = await hasRunningRun(env.db);
  if (active || running) throw conflict('A run of the instance backup is already in progress');
  const cfg = await currentConfig(env);
  const inst = await instanceId(env);
  const id = newId(env.now());
  const row: InstanceBackupRunTable = {
    id,
    status: 'running',
    trigger,
    artifact: `instance/${id}.svcbak`,
    artifact_removed: 0,
    size_bytes: null,
    sha256: null,
    error: null,
    notes: null,
    verified_at: null,
    verify_error: null,
    started_at: iso(env),
    finished_at: null,
  };
  await insertRun(env.db, row);
  active = true;
  track(executeRun(env, cfg, inst, row).finally(() => (active = false)));
  return row;
}

/** Caddy's data directory if this process can read it; else why not, for the run's notes. */
async function caddyStorage(env: Services): Promise<{ dir: string | null; note: string | null }> {
  const dir = env.config.proxy.caddyStorage;
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
    await access(dir, constants.R_OK | constants.X_OK);
    return { dir, note: null };
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? reason(e);
    return {
      dir: null,
      note: `Caddy's certificate storage (${dir}, SVC_CADDY_STORAGE) is not readable by the control plane (${why}): certificates are not in this backup; Caddy obtains new ones after a restore`,
    };
  }
}

async function executeRun(
  env: Services,
  cfg: InstanceBackupTable,
  inst: string,
  run: InstanceBackupRunTable,
): Promise<void> {
  let store: ArtifactStore | null = null;
  let staging: string | null = null;
  const binding: InstanceBinding = { instance_id: inst, run_id: run.id };
  try {
    store = destinationOf(env, cfg);
    await mkdir(spoolRoot(env.config.dataDir), { recursive: true, mode: 0o700 });
    staging = await mkdtemp(join(spoolRoot(env.config.dataDir), 'backup-instance-'));
    const dbCopy = join(staging, 'svc.db');
    // The online backup API: a consistent state, page by page, while the service keeps writing.
    await rawConnection(env.db).backup(dbCopy);
    // Caddy's files are copied first, so a renewal during the upload cannot change a file's size mid-entry.
    const caddy = await caddyStorage(env);
    let caddyDir: string | null = null;
    if (caddy.dir) {
      caddyDir = join(staging, 'caddy');
      await cp(caddy.dir, caddyDir, {
        recursive: true,
        verbatimSymlinks: true,
        filter: (src) => !src.endsWith('/locks'),
      });
    }
    if (caddy.note) await setNotes(env.db, run.id, caddy.note);
    const manifest: Manifest = {
      format: ARCHIVE_FORMAT,
      instance_id: inst,
      run_id: run.id,
      version: productVersion(),
      created_at: run.started_at,
      caddy_storage: caddy.dir,
      notes: caddy.note,
    };
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(c: Buffer, _e, cb) {
        hash.update(c);
        size += c.length;
        cb(null, c);
      },
    });
    const stored = count.pipe(new Transform({ transform: (c, _e, cb) => cb(null, c) }));
    try {
      await Promise.all([
        pipeline(
          packInstance(manifest, dbCopy, caddyDir),
          createGzip({ level: 3 }),
          encryptStream(masterKey(env), binding),
          count,
        ),
        store.put(run.artifact!, stored),
      ]);
    } catch (e) {
      stored.destroy();
      throw e;
    }
    const sha256 = hash.digest('hex');
    await markRunSucceeded(env.db, run.id, { size_bytes: size, sha256, finished_at: iso(env) });
    env.bus.publish('backups', {
      type: 'backup_succeeded',
      instance_id: inst,
      run_id: run.id,
      size_bytes: size,
      sha256,
      detail: caddy.note,
    });
    await applyInstanceRetention(env, cfg, store).catch((e) =>
      env.log.warn({ err: reason(e) }, 'instance backup retention could not run'),
    );
    await verifyInstanceRun(env, { ...run, sha256, size_bytes: size, status: 'succeeded' });
  } catch (e) {
    const why = reason(e);
    await store?.remove(run.artifact!).catch(() => {});
    await markRunEnded(env.db, run.id, 'failed', why, iso(env)).catch(() => {});
    env.log.warn({ run: run.id, err: why }, 'instance backup run failed');
    env.bus.publish('backups', { type: 'backup_failed', instance_id: inst, run_id: run.id, error: why });
  } finally {
    if (staging) await rm(staging, { recursive: true, force: true });
  }
}
