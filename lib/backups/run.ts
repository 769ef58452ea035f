// One run of an app's backup config: the source's stream goes through gzip and chunked
// AES-256-GCM into the destination with its sha256 counted on the way; nothing holds a dump
// whole. A success then applies retention and, when the config asks, verifies the new artifact.
import { createHash } from 'node:crypto';
import { createGzip } from 'node:zlib';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Services } from '../http/handler.js';
import type { BackupConfigTable, BackupRunTable } from '../db/schema.js';
import { newId } from '../crypto/random.js';
import { conflict } from '../http/errors.js';
import { volumeName } from '../docker/index.js';
import { CHUNK, encryptStream } from './crypto.js';
import { dumpDatabase } from '../databases/engines/index.js';
import { findDatabase } from '../databases/store.js';
import { dumpVolume } from './volumes.js';
import { destinationOf, type ArtifactStore } from './destinations.js';
import type { Source } from './config.js';
import { appName, hasRunningRun, insertRun, markRunEnded, markRunSucceeded } from './store.js';
import { iso, masterKey, reason, track } from './jobs.js';
import { applyRetention } from './retention.js';
import { verifyRun } from './verify.js';

const active = new Set<string>();

/** The row of a run of cfg that starts at startedAt: running, its artifact not written yet. */
export function runningRow(
  cfg: BackupConfigTable,
  id: string,
  trigger: 'manual' | 'schedule',
  startedAt: string,
): BackupRunTable {
  return {
    id,
    backup_id: cfg.id,
    app_id: cfg.app_id,
    status: 'running',
    trigger,
    artifact: `${cfg.app_id}/${id}.svcbak`,
    artifact_removed: 0,
    size_bytes: null,
    sha256: null,
    error: null,
    verified_at: null,
    verify_error: null,
    started_at: startedAt,
    finished_at: null,
  };
}

/** Starts a run in the background; one run of a config at a time. */
export async function startRun(
  env: Services,
  cfg: BackupConfigTable,
  trigger: 'manual' | 'schedule',
): Promise<BackupRunTable> {
  masterKey(env);
  if (active.has(cfg.id)) throw conflict('A run of this backup is already in progress');
  if (await hasRunningRun(env.db, cfg.id)) throw conflict('A run of this backup is already in progress');
  const row = runningRow(cfg, newId(env.now()), trigger, iso(env));
  await insertRun(env.db, row);
  active.add(cfg.id);
  track(executeRun(env, cfg, row).finally(() => active.delete(cfg.id)));
  return row;
}

async function sourceStream(
  env: Services,
  cfg: BackupConfigTable,
): Promise<{ stream: Readable; done: Promise<void> }> {
  const source = JSON.parse(cfg.source) as Source;
  if (source.type === 'database') {
    const row = await findDatabase(env.db, source.database_id);
    if (!row) throw new Error('the database no longer exists');
    if (row.status !== 'ready') throw new Error(`the database is ${row.status}`);
    return dumpDatabase(env, row);
  }
  const v = await dumpVolume(env, volumeName(await appName(env.db, cfg.app_id), source.volume));
  const done = new Promise<void>((resolve, reject) => {
    v.stream.on('end', resolve);
    v.stream.on('error', reject);
  }).finally(() => v.cleanup());
  done.catch(() => {});
  return { stream: v.stream, done };
}

// Each stage may run a few records ahead of the next: with Node's default 16 KiB, the gzip thread and
// the main thread (encryption, hashing, writing) mostly waited on each other.
const STREAM_BUFFER = 1024 * 1024;

async function executeRun(env: Services, cfg: BackupConfigTable, run: BackupRunTable): Promise<void> {
  let store: ArtifactStore | null = null;
  try {
    store = destinationOf(env, cfg);
    const src = await sourceStream(env, cfg);
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      highWaterMark: STREAM_BUFFER,
      transform(c: Buffer, _e, cb) {
        hash.update(c);
        size += c.length;
        cb(null, c);
      },
    });
    const binding = { app_id: cfg.app_id, backup_id: cfg.id, run_id: run.id };
    const stored = count.pipe(
      new Transform({ highWaterMark: STREAM_BUFFER, transform: (c, _e, cb) => cb(null, c) }),
    );
    try {
      await Promise.all([
        pipeline(
          src.stream,
          createGzip({ level: 3, chunkSize: CHUNK }),
          encryptStream(masterKey(env), binding),
          count,
        ),
        store.put(run.artifact!, stored),
        src.done,
      ]);
    } catch (e) {
      src.stream.destroy();
      stored.destroy();
      throw e;
    }
    const sha256 = hash.digest('hex');
    await markRunSucceeded(env.db, run.id, { size_bytes: size, sha256, finished_at: iso(env) });
    env.bus.publish('backups', {
      type: 'backup_succeeded',
      app_id: cfg.app_id,
      backup_id: cfg.id,
      run_id: run.id,
      size_bytes: size,
      sha256,
    });
    // The run has succeeded whatever happens next: a failure from here on must not mark it failed
    // (which would delete the artifact it just stored).
    await applyRetention(env, cfg, store).catch((e) =>
      env.log.warn({ backup: cfg.id, err: reason(e) }, 'retention could not run'),
    );
    // Any run, scheduled or on demand: the setting's promise is that every artifact it leaves
    // has been restored once into a scratch instance.
    if (cfg.verify_after_run === 1)
      await verifyRun(env, { ...run, sha256, size_bytes: size, status: 'succeeded' });
  } catch (e) {
    const why = reason(e);
    await store?.remove(run.artifact!).catch(() => {});
    await markRunEnded(env.db, run.id, 'failed', why, iso(env)).catch(() => {});
    env.log.warn({ backup: cfg.id, run: run.id, err: why }, 'backup run failed');
    env.bus.publish('backups', {
      type: 'backup_failed',
      app_id: cfg.app_id,
      backup_id: cfg.id,
      run_id: run.id,
      error: why,
    });
  }
}
