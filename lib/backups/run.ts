// Backup runs, restores and verifies: the source's stream goes through gzip and chunked
// AES-256-GCM into the destination with its sha256 counted on the way; nothing holds a dump whole.
import { createHash } from 'node:crypto';
import { createGzip, createGunzip } from 'node:zlib';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Services as Env } from '../http/handler.js';
import type { AppDatabaseTable, BackupConfigTable, BackupRunTable } from '../db/schema.js';
import type { App } from '../apps/model.js';
import { newId } from '../crypto/random.js';
import { conflict, HttpError, unavailable } from '../http/errors.js';
import { recordAudit } from '../audit/index.js';
import { guard, listAppContainers, volumeName, startContainer, stopContainer } from '../docker/index.js';
import { CHUNK, encryptStream, ArtifactAuthError } from './crypto.js';
import { checkVolumeArchive, dumpDatabase, dumpVolume, restoreDatabase, restoreVolume, sweepScratchServers, targetOf, verifyDatabase } from './engines.js';
import { destinationOf, type ArtifactStore } from './destinations.js';
import { removeBeyond, type Source } from './store.js';
import { fetchVerified, sweepSpool, type VerifiedArtifact } from './verified.js';
import { recoverInstanceRuns, settleInstanceJobs } from './instance.js';

const active = new Set<string>();
const iso = (env: Env) => new Date(env.now()).toISOString();

function masterKey(env: Env): Buffer {
  if (!env.config.masterKey) throw unavailable('SVC_MASTER_KEY is not set, so backups cannot be encrypted');
  return env.config.masterKey;
}

function reason(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 500);
}

/** The row of a run of cfg that starts at startedAt: running, its artifact not written yet. */
export function runningRow(cfg: BackupConfigTable, id: string, trigger: 'manual' | 'schedule', startedAt: string): BackupRunTable {
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
export async function startRun(env: Env, cfg: BackupConfigTable, trigger: 'manual' | 'schedule'): Promise<BackupRunTable> {
  masterKey(env);
  if (active.has(cfg.id)) throw conflict('A run of this backup is already in progress');
  const running = await env.db.selectFrom('backup_runs').select('id').where('backup_id', '=', cfg.id).where('status', '=', 'running').executeTakeFirst();
  if (running) throw conflict('A run of this backup is already in progress');
  const row = runningRow(cfg, newId(env.now()), trigger, iso(env));
  await env.db.insertInto('backup_runs').values(row).execute();
  active.add(cfg.id);
  const job = executeRun(env, cfg, row).finally(() => active.delete(cfg.id));
  track(job);
  return row;
}

const jobs = new Set<Promise<unknown>>();
function track(p: Promise<unknown>): void {
  jobs.add(p);
  void p.catch(() => {}).finally(() => jobs.delete(p));
}
/** Waits for the background jobs of this process (tests, clean shutdown). */
export async function settleJobs(): Promise<void> {
  while (jobs.size) await Promise.allSettled([...jobs]);
  await settleInstanceJobs();
}

async function sourceStream(env: Env, cfg: BackupConfigTable): Promise<{ stream: Readable; done: Promise<void> }> {
  const source = JSON.parse(cfg.source) as Source;
  if (source.type === 'database') {
    const row = await env.db.selectFrom('app_databases').selectAll().where('id', '=', source.database_id).executeTakeFirst();
    if (!row) throw new Error('the database no longer exists');
    if (row.status !== 'ready') throw new Error(`the database is ${row.status}`);
    const h = await dumpDatabase(env, targetOf(env, row));
    const what = row.engine === 'postgres' ? 'pg_dump' : row.engine === 'mariadb' ? 'mariadb-dump' : 'redis-cli --rdb';
    const done = h.done.then((r) => {
      if (r.code !== 0) throw new Error(`${what} exited with ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 400)}`);
    });
    done.catch(() => {});
    return { stream: h.stdout, done };
  }
  const app = await env.db.selectFrom('apps').select('name').where('id', '=', cfg.app_id).executeTakeFirstOrThrow();
  const v = await dumpVolume(env, volumeName(app.name, source.volume));
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

async function executeRun(env: Env, cfg: BackupConfigTable, run: BackupRunTable): Promise<void> {
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
    const stored = count.pipe(new Transform({ highWaterMark: STREAM_BUFFER, transform: (c, _e, cb) => cb(null, c) }));
    try {
      await Promise.all([pipeline(src.stream, createGzip({ level: 3, chunkSize: CHUNK }), encryptStream(masterKey(env), binding), count), store.put(run.artifact!, stored), src.done]);
    } catch (e) {
      src.stream.destroy();
      stored.destroy();
      throw e;
    }
    const sha256 = hash.digest('hex');
    await env.db
      .updateTable('backup_runs')
      .set({ status: 'succeeded', size_bytes: size, sha256, finished_at: iso(env) })
      .where('id', '=', run.id)
      .execute();
    env.bus.publish('backups', { type: 'backup_succeeded', app_id: cfg.app_id, backup_id: cfg.id, run_id: run.id, size_bytes: size, sha256 });
    // The run has succeeded whatever happens next: a failure from here on must not mark it failed
    // (which would delete the artifact it just stored).
    await applyRetention(env, cfg, store).catch((e) => env.log.warn({ backup: cfg.id, err: reason(e) }, 'retention could not run'));
    // Any run, scheduled or on demand: the setting's promise is that every artifact it leaves
    // has been restored once into a scratch instance.
    if (cfg.verify_after_run === 1) await verifyRun(env, { ...run, sha256, size_bytes: size, status: 'succeeded' });
  } catch (e) {
    const why = reason(e);
    await store?.remove(run.artifact!).catch(() => {});
    await env.db
      .updateTable('backup_runs')
      .set({ status: 'failed', error: why, finished_at: iso(env), artifact_removed: 1 })
      .where('id', '=', run.id)
      .execute()
      .catch(() => {});
    env.log.warn({ backup: cfg.id, run: run.id, err: why }, 'backup run failed');
    env.bus.publish('backups', { type: 'backup_failed', app_id: cfg.app_id, backup_id: cfg.id, run_id: run.id, error: why });
  }
}

/** keep_last newest successful artifacts stay; older ones go. Called only after a success. */
async function applyRetention(env: Env, cfg: BackupConfigTable, store: ArtifactStore): Promise<void> {
  const kept = await env.db
    .selectFrom('backup_runs')
    .selectAll()
    .where('backup_id', '=', cfg.id)
    .where('status', '=', 'succeeded')
    .where('artifact_removed', '=', 0)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const markRemoved = (id: string) => env.db.updateTable('backup_runs').set({ artifact_removed: 1 }).where('id', '=', id).execute();
  await removeBeyond(env, kept, cfg.keep_last, store, markRemoved, 'an artifact');
}

/**
 * Runs the process died during end `interrupted`; their partial artifacts and scratch servers are
 * removed. After an instance restore (`restored`), a run the copy caught running may have finished
 * on the lost host: its artifact is left where it is.
 */
export async function recoverRuns(env: Env, restored?: Parameters<typeof recoverInstanceRuns>[1]): Promise<void> {
  const stuck = await env.db.selectFrom('backup_runs').selectAll().where('status', '=', 'running').execute();
  for (const r of stuck) {
    const cfg = await env.db.selectFrom('backup_configs').selectAll().where('id', '=', r.backup_id).executeTakeFirst();
    if (cfg && r.artifact && !restored)
      await destinationOf(env, cfg)
        .remove(r.artifact)
        .catch(() => {});
    await env.db
      .updateTable('backup_runs')
      .set({ status: 'interrupted', error: 'the control plane stopped during the run', finished_at: iso(env), artifact_removed: 1 })
      .where('id', '=', r.id)
      .execute();
  }
  await env.db
    .updateTable('backup_restores')
    .set({ status: 'failed', error: 'the control plane stopped during the restore', finished_at: iso(env) })
    .where('status', '=', 'running')
    .execute();
  await recoverInstanceRuns(env, restored);
  for (const store of [destinationOf(env, null)]) await store.sweepPartials?.().catch(() => {});
  await sweepSpool(env.config.dataDir).catch(() => {});
  const swept = await sweepScratchServers(env).catch((err) => {
    env.log.warn({ err: String(err) }, 'scratch servers of interrupted verifies could not be listed');
    return 0;
  });
  if (swept) env.log.info({ removed: swept }, 'removed scratch servers left by interrupted verifies');
}

async function configOf(env: Env, run: BackupRunTable): Promise<BackupConfigTable> {
  return env.db.selectFrom('backup_configs').selectAll().where('id', '=', run.backup_id).executeTakeFirstOrThrow();
}

function usable(run: BackupRunTable): void {
  if (run.status !== 'succeeded') throw conflict(`The run ${run.status === 'running' ? 'is still running' : 'did not succeed'}: there is no artifact`);
  if (run.artifact_removed === 1) throw new HttpError('gone', 'The artifact of this run was removed');
}

/** The run's artifact, fetched once and authenticated; every use below reads this one copy. */
function fetchArtifact(env: Env, store: ArtifactStore, run: BackupRunTable): Promise<VerifiedArtifact> {
  return fetchVerified(store, run, masterKey(env), env.config.dataDir);
}

/** The decrypted, still compressed dump, after the whole artifact authenticated. */
export async function openDownload(env: Env, run: BackupRunTable): Promise<Readable> {
  usable(run);
  const store = destinationOf(env, await configOf(env, run));
  let copy: VerifiedArtifact;
  try {
    copy = await fetchArtifact(env, store, run);
  } catch (e) {
    if (e instanceof ArtifactAuthError) throw conflict(`Refused: ${e.message}`);
    throw e;
  }
  const plain = copy.plain();
  // Ended, failed or abandoned by the client: the spooled copy goes with the stream.
  plain.once('close', () => void copy.close());
  return plain;
}

function plainDump(copy: VerifiedArtifact): Readable {
  const gunzip = createGunzip();
  pipeline(copy.plain(), gunzip).catch((e) => gunzip.destroy(e));
  return gunzip;
}

export async function startRestore(
  env: Env,
  app: App,
  run: BackupRunTable,
  actor: { id: string | null; name: string | null },
): Promise<{ id: string; run_id: string; status: string; error: null; started_at: string; finished_at: null }> {
  usable(run);
  masterKey(env);
  const id = newId(env.now());
  const row = { id, run_id: run.id, app_id: app.id, status: 'running', error: null, started_at: iso(env), finished_at: null };
  await env.db.insertInto('backup_restores').values(row).execute();
  track(executeRestore(env, app, run, id, actor));
  return row;
}

async function executeRestore(env: Env, app: App, run: BackupRunTable, id: string, actor: { id: string | null; name: string | null }): Promise<void> {
  let status = 'succeeded';
  let error: string | null = null;
  const stopped: string[] = [];
  let copy: VerifiedArtifact | null = null;
  try {
    const cfg = await configOf(env, run);
    copy = await fetchArtifact(env, destinationOf(env, cfg), run);
    const artifact = copy;
    const source = JSON.parse(cfg.source) as Source;
    let dbRow: AppDatabaseTable | undefined;
    if (source.type === 'database') {
      dbRow = await env.db.selectFrom('app_databases').selectAll().where('id', '=', source.database_id).executeTakeFirst();
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
    if (dbRow) await restoreDatabase(env, targetOf(env, dbRow), async () => plainDump(artifact));
    else await restoreVolume(env, vol!, plainDump(artifact));
  } catch (e) {
    status = 'failed';
    error = reason(e);
  } finally {
    await copy?.close();
    for (const cid of stopped) await startContainer(env.engine, cid).catch((e) => env.log.warn({ err: reason(e) }, 'restart after restore failed'));
  }
  await env.db
    .updateTable('backup_restores')
    .set({ status, error, finished_at: iso(env) })
    .where('id', '=', id)
    .execute()
    .catch(() => {});
  await recordAudit(env.db, {
    route: 'POST /api/apps/{id}/backups/runs/{rid}/restore',
    actorId: actor.id,
    actor: actor.name,
    event: 'backup.restore_finished',
    target: app.id,
    outcome: status === 'succeeded' ? 200 : 500,
    detail: { restore: id, run: run.id, status, error },
  }).catch(() => {});
  env.bus.publish('backups', { type: 'restore_finished', app_id: app.id, run_id: run.id, restore_id: id, status, error });
}

/**
 * Restores a database from a run's artifact and waits for it: recovery after an instance restore,
 * when no app container runs yet (so none is stopped).
 */
export async function restoreDatabaseFromRun(env: Env, row: AppDatabaseTable, run: BackupRunTable): Promise<void> {
  usable(run);
  const copy = await fetchArtifact(env, destinationOf(env, await configOf(env, run)), run);
  try {
    await restoreDatabase(env, targetOf(env, row), async () => plainDump(copy));
  } finally {
    await copy.close();
  }
}

export async function startVerify(env: Env, run: BackupRunTable): Promise<void> {
  usable(run);
  masterKey(env);
  // A new verdict replaces the old one: until it is in, the run reads as not verified.
  await env.db.updateTable('backup_runs').set({ verified_at: null, verify_error: null }).where('id', '=', run.id).execute();
  track(verifyRun(env, run));
}

async function verifyRun(env: Env, run: BackupRunTable): Promise<void> {
  let copy: VerifiedArtifact | null = null;
  try {
    const cfg = await configOf(env, run);
    copy = await fetchArtifact(env, destinationOf(env, cfg), run);
    const artifact = copy;
    const source = JSON.parse(cfg.source) as Source;
    if (source.type === 'database') {
      const row = await env.db.selectFrom('app_databases').selectAll().where('id', '=', source.database_id).executeTakeFirst();
      if (!row) throw new Error('the database no longer exists');
      await verifyDatabase(env, row, async () => plainDump(artifact));
    } else {
      await checkVolumeArchive(plainDump(artifact));
    }
    await env.db
      .updateTable('backup_runs')
      .set({ verified_at: iso(env), verify_error: null })
      .where('id', '=', run.id)
      .execute();
  } catch (e) {
    const why = reason(e);
    await env.db
      .updateTable('backup_runs')
      .set({ verified_at: null, verify_error: why })
      .where('id', '=', run.id)
      .execute()
      .catch(() => {});
    // The contract has no event of its own for this: an artifact that does not restore is a
    // failed backup as far as the operator is concerned, so it notifies as one.
    env.log.warn({ run: run.id, err: why }, 'backup verification failed');
    env.bus.publish('backups', { type: 'backup_failed', stage: 'verify', app_id: run.app_id, backup_id: run.backup_id, run_id: run.id, error: `verification failed: ${why}` });
  } finally {
    await copy?.close();
  }
}
