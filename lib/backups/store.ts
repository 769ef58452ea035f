// Backup configs and runs: validation at save time, rows, and the views the API answers with.
import { Cron } from 'croner';
import type { Env } from '../env.js';
import type { BackupConfigTable, BackupRunTable, BackupRestoreTable } from '../db/schema.js';
import { newId } from '../crypto/random.js';
import { requireSealer } from '../crypto/seal.js';
import { badRequest, notFound } from '../http/errors.js';
import { probe, S3Refused } from './s3.js';
import type { ArtifactStore } from './artifact.js';
import { s3Binding } from '../crypto/bindings.js';

export type Source = { type: 'database'; database_id: string } | { type: 'volume'; volume: string };
export type Destination = { type: 'local' } | { type: 's3'; endpoint: string; region: string; bucket: string; prefix: string; access_key_id: string; path_style: boolean };

export interface ConfigInput {
  source?: Source;
  schedule?: string;
  keep_last?: number;
  destination?: (Destination & { secret_access_key?: string }) | { type: 'local' };
  enabled?: boolean;
  verify_after_run?: boolean;
}

export const VOLUME_KEY = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/;
export { s3Binding } from '../crypto/bindings.js';

/** A 5-field cron expression (UTC), parsed; a 6-field one (seconds) or a bad field is refused. */
export function parseSchedule(expr: string): Cron {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5) throw badRequest(`schedule must be a 5-field cron expression (minute hour day month weekday), got ${fields.length} fields`, [{ field: 'schedule', message: '5 fields' }]);
  try {
    return new Cron(fields.join(' '), { paused: true, timezone: 'UTC' });
  } catch (e) {
    throw badRequest(`schedule is not a valid cron expression: ${(e as Error).message}`.slice(0, 300), [{ field: 'schedule', message: 'invalid' }]);
  }
}

export function checkDestination(d: NonNullable<ConfigInput['destination']>, hasStoredSecret: boolean): void {
  if (d.type === 'local') return;
  const s3 = d as Destination & { type: 's3'; secret_access_key?: string };
  let u: URL;
  try {
    u = new URL(s3.endpoint);
  } catch {
    throw badRequest('destination.endpoint is not a URL', [{ field: 'destination.endpoint', message: 'not a URL' }]);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw badRequest('destination.endpoint must be https://', [{ field: 'destination.endpoint', message: 'https only' }]);
  // http:// to a public address, and the addresses no S3 server lives at, are refused once the
  // name is resolved (probeDestination, lib/backups/s3.ts).
  if (u.username || u.password || u.search || u.hash)
    throw badRequest('destination.endpoint must not carry credentials, a query or a fragment', [{ field: 'destination.endpoint', message: 'bare origin' }]);
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(s3.bucket)) throw badRequest('destination.bucket is not a valid bucket name', [{ field: 'destination.bucket', message: 'invalid' }]);
  if (!/^[a-z0-9-]{1,40}$/.test(s3.region)) throw badRequest('destination.region is not a region name', [{ field: 'destination.region', message: 'invalid' }]);
  if (!/^[A-Za-z0-9_./-]{0,200}$/.test(s3.prefix) || s3.prefix.includes('..'))
    throw badRequest('destination.prefix may hold letters, digits, _ . / - only', [{ field: 'destination.prefix', message: 'invalid' }]);
  if (!/^[A-Za-z0-9_+/=-]{3,128}$/.test(s3.access_key_id)) throw badRequest('destination.access_key_id is invalid', [{ field: 'destination.access_key_id', message: 'invalid' }]);
  if (!s3.secret_access_key && !hasStoredSecret) throw badRequest('destination.secret_access_key is required', [{ field: 'destination.secret_access_key', message: 'required' }]);
}

/**
 * Where it is knowable at save time, a bad S3 destination is a 400: the endpoint passes the
 * guard (lib/backups/s3.ts), and the bucket answers HeadBucket to these credentials.
 */
export async function probeDestination(d: Destination & { type: 's3' }, secret: string): Promise<void> {
  try {
    await probe({ ...d, secret_access_key: secret });
  } catch (e) {
    if (e instanceof S3Refused) throw badRequest(e.message, [{ field: e.field, message: 'refused' }]);
    throw e;
  }
}

export interface ConfigView {
  id: string;
  app_id: string;
  source: Source;
  schedule: string;
  keep_last: number;
  destination: Destination | (Destination & { secret_set: boolean });
  enabled: boolean;
  verify_after_run: boolean;
  last_run: RunView | null;
  created_at: string;
  updated_at: string;
}

export interface RunView {
  id: string;
  backup_id: string;
  status: string;
  trigger: string;
  started_at: string;
  finished_at: string | null;
  size_bytes: number | null;
  sha256: string | null;
  error: string | null;
  verified_at: string | null;
  verify_error: string | null;
  artifact_removed: boolean;
}

export function runView(r: BackupRunTable): RunView {
  return {
    id: r.id,
    backup_id: r.backup_id,
    status: r.status,
    trigger: r.trigger,
    started_at: r.started_at,
    finished_at: r.finished_at,
    size_bytes: r.size_bytes,
    sha256: r.sha256,
    error: r.error,
    verified_at: r.verified_at,
    verify_error: r.verify_error,
    artifact_removed: r.artifact_removed === 1,
  };
}

export function restoreView(r: BackupRestoreTable) {
  return { id: r.id, run_id: r.run_id, status: r.status, error: r.error, started_at: r.started_at, finished_at: r.finished_at };
}

export async function configView(env: Env, r: BackupConfigTable): Promise<ConfigView> {
  const last = await env.db.selectFrom('backup_runs').selectAll().where('backup_id', '=', r.id).orderBy('started_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
  const dest = JSON.parse(r.destination) as Destination;
  return {
    id: r.id,
    app_id: r.app_id,
    source: JSON.parse(r.source) as Source,
    schedule: r.schedule,
    keep_last: r.keep_last,
    destination: dest.type === 's3' ? { ...dest, secret_set: r.secret_sealed !== null } : dest,
    enabled: r.enabled === 1,
    verify_after_run: r.verify_after_run === 1,
    last_run: last ? runView(last) : null,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

async function checkSource(env: Env, appId: string, s: Source): Promise<void> {
  if (s.type === 'database') {
    const db = await env.db.selectFrom('app_databases').select('id').where('app_id', '=', appId).where('id', '=', s.database_id).executeTakeFirst();
    if (!db) throw badRequest('source.database_id is not a database of this app', [{ field: 'source.database_id', message: 'unknown' }]);
  } else if (!VOLUME_KEY.test(s.volume)) {
    throw badRequest('source.volume must be a volume name as the compose file writes it', [{ field: 'source.volume', message: 'invalid' }]);
  }
}

export function checkKeep(k: number): void {
  if (!Number.isInteger(k) || k < 1 || k > 365) throw badRequest('keep_last must be an integer from 1 to 365', [{ field: 'keep_last', message: '1..365' }]);
}

export async function createConfig(env: Env, appId: string, input: Required<Pick<ConfigInput, 'source' | 'schedule' | 'keep_last'>> & ConfigInput): Promise<BackupConfigTable> {
  parseSchedule(input.schedule);
  checkKeep(input.keep_last);
  await checkSource(env, appId, input.source);
  const destIn = input.destination ?? { type: 'local' as const };
  checkDestination(destIn, false);
  const id = newId(env.now());
  const now = new Date(env.now()).toISOString();
  let secret: string | null = null;
  let dest: Destination = { type: 'local' };
  if (destIn.type === 's3') {
    const { secret_access_key, ...rest } = destIn as Destination & { type: 's3'; secret_access_key?: string };
    requireSealer(env.sealer);
    dest = { ...rest, prefix: rest.prefix ?? '', path_style: rest.path_style ?? false };
    await probeDestination(dest, secret_access_key!);
    secret = env.sealer.seal(secret_access_key!, s3Binding(id));
  }
  const row: BackupConfigTable = {
    id,
    app_id: appId,
    source: JSON.stringify(input.source),
    schedule: input.schedule.trim().split(/\s+/).join(' '),
    keep_last: input.keep_last,
    destination: JSON.stringify(dest),
    secret_sealed: secret,
    enabled: input.enabled === false ? 0 : 1,
    verify_after_run: input.verify_after_run ? 1 : 0,
    last_scheduled_at: now,
    created_at: now,
    updated_at: now,
  };
  await env.db.insertInto('backup_configs').values(row).execute();
  return row;
}

export async function getConfig(env: Env, appId: string, id: string): Promise<BackupConfigTable> {
  const r = await env.db.selectFrom('backup_configs').selectAll().where('app_id', '=', appId).where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound('No such backup config');
  return r;
}

/**
 * Whether a change lowers keep_last or changes the destination or the source (what a step-up
 * guards). A destination given again as it is stored is no change; a new secret is one.
 */
export function patchNeedsStepUp(cur: BackupConfigTable, input: ConfigInput): boolean {
  if (input.keep_last !== undefined && input.keep_last < cur.keep_last) return true;
  if (input.source !== undefined && canonical(input.source) !== canonical(JSON.parse(cur.source))) return true;
  if (input.destination !== undefined) {
    const { secret_access_key, ...rest } = input.destination as Destination & { secret_access_key?: string };
    if (secret_access_key !== undefined) return true;
    const given = rest.type === 's3' ? { ...rest, prefix: rest.prefix ?? '', path_style: rest.path_style ?? false } : rest;
    if (canonical(given) !== canonical(JSON.parse(cur.destination))) return true;
  }
  return false;
}

/** JSON with sorted keys, for comparing stored and given objects whatever their key order. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (!x || typeof x !== 'object' || Array.isArray(x)) return x;
    return Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b)));
  });
}

export async function updateConfig(env: Env, appId: string, id: string, input: ConfigInput): Promise<BackupConfigTable> {
  const cur = await getConfig(env, appId, id);
  const patch: Partial<BackupConfigTable> = { updated_at: new Date(env.now()).toISOString() };
  if (input.schedule !== undefined) {
    parseSchedule(input.schedule);
    patch.schedule = input.schedule.trim().split(/\s+/).join(' ');
  }
  if (input.keep_last !== undefined) {
    checkKeep(input.keep_last);
    patch.keep_last = input.keep_last;
  }
  if (input.source !== undefined) {
    await checkSource(env, appId, input.source);
    patch.source = JSON.stringify(input.source);
  }
  if (input.enabled !== undefined) patch.enabled = input.enabled ? 1 : 0;
  if (input.verify_after_run !== undefined) patch.verify_after_run = input.verify_after_run ? 1 : 0;
  if (input.destination !== undefined) Object.assign(patch, await storedDestination(env, input.destination, cur.secret_sealed, id));
  await env.db.updateTable('backup_configs').set(patch).where('id', '=', id).execute();
  return getConfig(env, appId, id);
}

export async function getRun(env: Env, appId: string, runId: string): Promise<BackupRunTable> {
  const r = await env.db.selectFrom('backup_runs').selectAll().where('app_id', '=', appId).where('id', '=', runId).executeTakeFirst();
  if (!r) throw notFound('No such backup run');
  return r;
}

export async function getRestore(env: Env, appId: string, id: string) {
  const r = await env.db.selectFrom('backup_restores').selectAll().where('app_id', '=', appId).where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound('No such restore');
  return restoreView(r);
}

/**
 * The stored form of a destination an operator sends: local, or S3 probed with the new secret (or
 * the sealed one, bound to `bindingId`). `secret_sealed` is absent when the secret stays as it is.
 */
export async function storedDestination(
  env: Env,
  input: Destination & { secret_access_key?: string },
  currentSecret: string | null,
  bindingId: string,
): Promise<{ destination: string; secret_sealed?: string | null }> {
  checkDestination(input, currentSecret !== null);
  if (input.type === 'local') return { destination: JSON.stringify({ type: 'local' }), secret_sealed: null };
  const { secret_access_key, ...rest } = input as Destination & { type: 's3'; secret_access_key?: string };
  requireSealer(env.sealer);
  const dest = { ...rest, prefix: rest.prefix ?? '', path_style: rest.path_style ?? false };
  await probeDestination(dest, secret_access_key ?? env.sealer.open(currentSecret!, s3Binding(bindingId)));
  const out: { destination: string; secret_sealed?: string } = { destination: JSON.stringify(dest) };
  if (secret_access_key) out.secret_sealed = env.sealer.seal(secret_access_key, s3Binding(bindingId));
  return out;
}

/**
 * Retention: of the successful runs with an artifact (newest first), those past `keepLast` lose it.
 * A removal that fails is logged and tried again after the next success.
 */
export async function removeBeyond<R extends { id: string; artifact: string | null }>(
  env: Env,
  newestFirst: R[],
  keepLast: number,
  store: ArtifactStore,
  markRemoved: (id: string) => Promise<unknown>,
  what: string,
): Promise<void> {
  for (const r of newestFirst.slice(keepLast)) {
    try {
      await store.remove(r.artifact!);
      await markRemoved(r.id);
    } catch (e) {
      env.log.warn({ run: r.id, err: (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 500) }, `retention could not remove ${what}`);
    }
  }
}
