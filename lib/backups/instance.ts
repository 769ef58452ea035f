// The instance backup: one configuration (like an app backup's, without a source) and its runs.
// A run stages a consistent copy of the control database and Caddy's data directory, packs them
// (instance-archive.ts) and sends the tar through the same gzip and artifact encryption as app
// backups, bound to this instance and run; then retention, then a verification of the stored
// artifact (fetched once, tags and binding checked, the database copy passes integrity_check).
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, cp, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Services as Env } from '../http/handler.js';
import type { InstanceBackupRunTable, InstanceBackupTable } from '../db/schema.js';
import { rawConnection } from '../db/index.js';
import { newId } from '../crypto/random.js';
import { conflict, HttpError, notFound, unavailable } from '../http/errors.js';
import { productVersion } from '../version.js';
import { ArtifactBindingError, encryptStream, type InstanceBinding } from './crypto.js';
import { destinationOf } from './destinations.js';
import type { ArtifactStore } from './artifact.js';
import { canonical, checkKeep, removeBeyond, storedDestination, parseSchedule, type ConfigInput, type Destination } from './store.js';
import { openVerified, spoolRoot, type VerifiedArtifact } from './verified.js';
import { ARCHIVE_FORMAT, checkDatabase, packInstance, unpackInstance, type Manifest } from './instance-archive.js';

export const INSTANCE_BACKUP_ID = 'instance';
const DEFAULTS = { schedule: '0 3 * * *', keep_last: 7 };
const iso = (env: Env) => new Date(env.now()).toISOString();
const reason = (e: unknown) => (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 500);

export type InstanceBackupInput = Pick<ConfigInput, 'schedule' | 'keep_last' | 'destination' | 'enabled'>;

export interface InstanceRunView {
  id: string;
  status: string;
  trigger: string;
  started_at: string;
  finished_at: string | null;
  size_bytes: number | null;
  sha256: string | null;
  error: string | null;
  notes: string | null;
  verified_at: string | null;
  verify_error: string | null;
  artifact_removed: boolean;
}

export function instanceRunView(r: InstanceBackupRunTable): InstanceRunView {
  return {
    id: r.id,
    status: r.status,
    trigger: r.trigger,
    started_at: r.started_at,
    finished_at: r.finished_at,
    size_bytes: r.size_bytes,
    sha256: r.sha256,
    error: r.error,
    notes: r.notes,
    verified_at: r.verified_at,
    verify_error: r.verify_error,
    artifact_removed: r.artifact_removed === 1,
  };
}

function masterKey(env: Env): Buffer {
  if (!env.config.masterKey) throw unavailable('SVC_MASTER_KEY is not set, so backups cannot be encrypted');
  return env.config.masterKey;
}

/** The id boot loaded (lib/instance/owner.ts) and every engine object of this instance carries. */
export async function instanceId(env: Env): Promise<string> {
  return env.engine.owner.instanceId;
}

export const readConfig = (env: Env) => env.db.selectFrom('instance_backup').selectAll().where('id', '=', INSTANCE_BACKUP_ID).executeTakeFirst();

/** The configuration as stored, or the defaults (disabled, local) when none was ever saved. */
async function currentConfig(env: Env): Promise<InstanceBackupTable> {
  const row = await readConfig(env);
  if (row) return row;
  const now = iso(env);
  return { id: INSTANCE_BACKUP_ID, ...DEFAULTS, destination: JSON.stringify({ type: 'local' }), secret_sealed: null, enabled: 0, last_scheduled_at: now, created_at: now, updated_at: now };
}

export async function instanceConfigView(env: Env) {
  const r = await currentConfig(env);
  const last = await env.db.selectFrom('instance_backup_runs').selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
  const dest = JSON.parse(r.destination) as Destination;
  return {
    schedule: r.schedule,
    keep_last: r.keep_last,
    destination: dest.type === 's3' ? { ...dest, secret_set: r.secret_sealed !== null } : dest,
    enabled: r.enabled === 1,
    last_run: last ? instanceRunView(last) : null,
    updated_at: r.updated_at,
  };
}

/** Fewer artifacts kept, or artifacts going elsewhere (or with another secret): what a step-up guards. */
export async function instancePutNeedsStepUp(env: Env, input: InstanceBackupInput): Promise<boolean> {
  const cur = await currentConfig(env);
  if (input.keep_last !== undefined && input.keep_last < cur.keep_last) return true;
  if (input.destination !== undefined) {
    const { secret_access_key, ...rest } = input.destination as Destination & { secret_access_key?: string };
    if (secret_access_key !== undefined) return true;
    const given = rest.type === 's3' ? { ...rest, prefix: rest.prefix ?? '', path_style: rest.path_style ?? false } : rest;
    if (canonical(given) !== canonical(JSON.parse(cur.destination))) return true;
  }
  return false;
}

/** Saves the fields given over the current configuration (or the defaults); validated before anything is written. */
export async function putInstanceConfig(env: Env, input: InstanceBackupInput): Promise<void> {
  const cur = await currentConfig(env);
  const next: InstanceBackupTable = { ...cur, updated_at: iso(env) };
  if (input.schedule !== undefined) {
    parseSchedule(input.schedule);
    next.schedule = input.schedule.trim().split(/\s+/).join(' ');
  }
  if (input.keep_last !== undefined) {
    checkKeep(input.keep_last);
    next.keep_last = input.keep_last;
  }
  if (input.enabled !== undefined) next.enabled = input.enabled ? 1 : 0;
  if (input.destination !== undefined) Object.assign(next, await storedDestination(env, input.destination, cur.secret_sealed, INSTANCE_BACKUP_ID));
  await env.db
    .insertInto('instance_backup')
    .values(next)
    .onConflict((c) => c.column('id').doUpdateSet(next))
    .execute();
}

export async function listInstanceRuns(env: Env): Promise<InstanceRunView[]> {
  const rows = await env.db.selectFrom('instance_backup_runs').selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(500).execute();
  return rows.map(instanceRunView);
}

export async function getInstanceRun(env: Env, id: string): Promise<InstanceBackupRunTable> {
  const r = await env.db.selectFrom('instance_backup_runs').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound('No such instance backup run');
  return r;
}

let active = false;
const jobs = new Set<Promise<unknown>>();
/** Waits for this process's instance backup jobs (tests, clean shutdown). */
export async function settleInstanceJobs(): Promise<void> {
  while (jobs.size) await Promise.allSettled([...jobs]);
}

/** Starts a run in the background; one at a time. */
export async function startInstanceRun(env: Env, trigger: 'manual' | 'schedule'): Promise<InstanceBackupRunTable> {
  masterKey(env);
  const running = await env.db.selectFrom('instance_backup_runs').select('id').where('status', '=', 'running').executeTakeFirst();
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
  await env.db.insertInto('instance_backup_runs').values(row).execute();
  active = true;
  const job = executeRun(env, cfg, inst, row).finally(() => (active = false));
  jobs.add(job);
  void job.finally(() => jobs.delete(job));
  return row;
}

/** Caddy's data directory if this process can read it; else why not, for the run's notes. */
async function caddyStorage(env: Env): Promise<{ dir: string | null; note: string | null }> {
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

async function executeRun(env: Env, cfg: InstanceBackupTable, inst: string, run: InstanceBackupRunTable): Promise<void> {
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
      await cp(caddy.dir, caddyDir, { recursive: true, verbatimSymlinks: true, filter: (src) => !src.endsWith('/locks') });
    }
    if (caddy.note) await env.db.updateTable('instance_backup_runs').set({ notes: caddy.note }).where('id', '=', run.id).execute();
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
      await Promise.all([pipeline(packInstance(manifest, dbCopy, caddyDir), createGzip({ level: 3 }), encryptStream(masterKey(env), binding), count), store.put(run.artifact!, stored)]);
    } catch (e) {
      stored.destroy();
      throw e;
    }
    const sha256 = hash.digest('hex');
    await env.db
      .updateTable('instance_backup_runs')
      .set({ status: 'succeeded', size_bytes: size, sha256, finished_at: iso(env) })
      .where('id', '=', run.id)
      .execute();
    env.bus.publish('backups', { type: 'backup_succeeded', instance_id: inst, run_id: run.id, size_bytes: size, sha256, detail: caddy.note });
    await applyRetention(env, cfg, store).catch((e) => env.log.warn({ err: reason(e) }, 'instance backup retention could not run'));
    await verifyInstanceRun(env, { ...run, sha256, size_bytes: size, status: 'succeeded' });
  } catch (e) {
    const why = reason(e);
    await store?.remove(run.artifact!).catch(() => {});
    await env.db
      .updateTable('instance_backup_runs')
      .set({ status: 'failed', error: why, finished_at: iso(env), artifact_removed: 1 })
      .where('id', '=', run.id)
      .execute()
      .catch(() => {});
    env.log.warn({ run: run.id, err: why }, 'instance backup run failed');
    env.bus.publish('backups', { type: 'backup_failed', instance_id: inst, run_id: run.id, error: why });
  } finally {
    if (staging) await rm(staging, { recursive: true, force: true });
  }
}

async function applyRetention(env: Env, cfg: InstanceBackupTable, store: ArtifactStore): Promise<void> {
  const kept = await env.db
    .selectFrom('instance_backup_runs')
    .selectAll()
    .where('status', '=', 'succeeded')
    .where('artifact_removed', '=', 0)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const markRemoved = (id: string) => env.db.updateTable('instance_backup_runs').set({ artifact_removed: 1 }).where('id', '=', id).execute();
  await removeBeyond(env, kept, cfg.keep_last, store, markRemoved, 'an instance backup');
}

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
          if (!found || !(found as InstanceBinding).instance_id) throw new ArtifactBindingError('the artifact is not an instance backup');
          expected(found as InstanceBinding);
        }
      : expected;
  let copy: (VerifiedArtifact & { sha256: string; size_bytes: number }) | null = null;
  try {
    copy = await openVerified(store, key, sha256, check, master, dataDir);
    const gunzip = createGunzip();
    pipeline(copy.plain(), gunzip).catch((e) => gunzip.destroy(e));
    const out = await unpackInstance(gunzip, dir);
    const bound = typeof expected === 'function' ? null : expected;
    if (bound && (out.manifest.instance_id !== bound.instance_id || out.manifest.run_id !== bound.run_id)) throw new Error('the manifest names another instance or run');
    checkDatabase(join(dir, 'svc.db'));
    return { ...out, sha256: copy.sha256, size_bytes: copy.size_bytes };
  } finally {
    await copy?.close();
  }
}

/** Verifies a stored run: a failure is recorded on the run (verify_error), never thrown. */
export async function verifyInstanceRun(env: Env, run: InstanceBackupRunTable): Promise<void> {
  const scratch = join(spoolRoot(env.config.dataDir), `backup-verify-${run.id}`);
  try {
    const cfg = await currentConfig(env);
    await rm(scratch, { recursive: true, force: true });
    await unpackVerified(destinationOf(env, cfg), run.artifact!, run.sha256, { instance_id: await instanceId(env), run_id: run.id }, masterKey(env), env.config.dataDir, scratch);
    await env.db
      .updateTable('instance_backup_runs')
      .set({ verified_at: iso(env), verify_error: null })
      .where('id', '=', run.id)
      .execute();
  } catch (e) {
    const why = reason(e);
    await env.db.updateTable('instance_backup_runs').set({ verified_at: null, verify_error: why }).where('id', '=', run.id).execute();
    env.log.warn({ run: run.id, err: why }, 'instance backup verification failed');
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Starts a verification of a run in the background (the run's verified_at or verify_error says how it went). */
export async function startInstanceVerify(env: Env, runId: string): Promise<void> {
  const run = await getInstanceRun(env, runId);
  usable(run);
  masterKey(env);
  await env.db.updateTable('instance_backup_runs').set({ verified_at: null, verify_error: null }).where('id', '=', run.id).execute();
  const job = verifyInstanceRun(env, run);
  jobs.add(job);
  void job.finally(() => jobs.delete(job));
}

function usable(run: InstanceBackupRunTable): void {
  if (run.status !== 'succeeded') throw conflict(`The run ${run.status === 'running' ? 'is still running' : 'did not succeed'}: there is no artifact`);
  if (run.artifact_removed === 1) throw new HttpError('gone', 'The artifact of this run was removed');
}

/** Removes one run's artifact; the run stays, marked removed. */
export async function removeInstanceRunArtifact(env: Env, runId: string): Promise<InstanceBackupRunTable> {
  const run = await getInstanceRun(env, runId);
  if (run.status === 'running') throw conflict('The run is still running: its artifact is not complete yet');
  if (!run.artifact || run.artifact_removed === 1) return run;
  try {
    await destinationOf(env, await currentConfig(env)).remove(run.artifact);
  } catch (e) {
    throw new HttpError('service_unavailable', `The artifact could not be removed: ${reason(e).slice(0, 300)}`);
  }
  await env.db.updateTable('instance_backup_runs').set({ artifact_removed: 1 }).where('id', '=', run.id).execute();
  return { ...run, artifact_removed: 1 };
}

/**
 * Runs the process died during end `interrupted`, their partial artifacts removed. `restored` is
 * the run a restored database was copied during (its row still says running): that one succeeded,
 * and its artifact, the one the instance came back from, stays.
 */
export async function recoverInstanceRuns(env: Env, restored?: { run_id: string; sha256: string; size_bytes: number }): Promise<void> {
  const stuck = await env.db.selectFrom('instance_backup_runs').selectAll().where('status', '=', 'running').execute();
  if (!stuck.length) return;
  const cfg = await currentConfig(env);
  for (const r of stuck) {
    if (restored && r.id === restored.run_id) {
      await env.db
        .updateTable('instance_backup_runs')
        .set({ status: 'succeeded', sha256: restored.sha256, size_bytes: restored.size_bytes, finished_at: iso(env) })
        .where('id', '=', r.id)
        .execute();
      continue;
    }
    if (r.artifact)
      await destinationOf(env, cfg)
        .remove(r.artifact)
        .catch(() => {});
    await env.db
      .updateTable('instance_backup_runs')
      .set({ status: 'interrupted', error: 'the control plane stopped during the run', finished_at: iso(env), artifact_removed: 1 })
      .where('id', '=', r.id)
      .execute();
  }
}
