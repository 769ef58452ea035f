// Saving a backup config: what a source, schedule, keep_last and destination may be, checked
// before anything is written, and the rows they become (written through store.ts).
import { Cron } from 'croner';
import type { Services } from '../http/handler.js';
import type { BackupConfigTable } from '../db/schema.js';
import { newId } from '../crypto/random.js';
import { requireSealer } from '../crypto/seal.js';
import { badRequest } from '../http/errors.js';
import { probe, S3Refused } from './s3.js';
import { isDatabaseOfApp } from '../databases/store.js';
import { getConfig, insertConfig, updateConfigRow } from './store.js';

export type Source = { type: 'database'; database_id: string } | { type: 'volume'; volume: string };
export type Destination =
  | { type: 'local' }
  | {
      type: 's3';
      endpoint: string;
      region: string;
      bucket: string;
      prefix: string;
      access_key_id: string;
      path_style: boolean;
    };

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
import { s3Binding } from '../crypto/bindings.js';

/** A 5-field cron expression (UTC), parsed; a 6-field one (seconds) or a bad field is refused. */
export function parseSchedule(expr: string): Cron {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5)
    throw badRequest(
      `schedule must be a 5-field cron expression (minute hour day month weekday), got ${fields.length} fields`,
      [{ field: 'schedule', message: '5 fields' }],
    );
  try {
    return new Cron(fields.join(' '), { paused: true, timezone: 'UTC' });
  } catch (e) {
    throw badRequest(`schedule is not a valid cron expression: ${(e as Error).message}`.slice(0, 300), [
      { field: 'schedule', message: 'invalid' },
    ]);
  }
}

export function checkDestination(d: NonNullable<ConfigInput['destination']>, hasStoredSecret: boolean): void {
  if (d.type === 'local') return;
  const s3 = d as Destination & { type: 's3'; secret_access_key?: string };
  let u: URL;
  try {
    u = new URL(s3.endpoint);
  } catch {
    throw badRequest('destination.endpoint is not a URL', [
      { field: 'destination.endpoint', message: 'not a URL' },
    ]);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw badRequest('destination.endpoint must be https://', [
      { field: 'destination.endpoint', message: 'https only' },
    ]);
  // http:// to a public address, and the addresses no S3 server lives at, are refused once the
  // name is resolved (probeDestination, lib/backups/s3.ts).
  if (u.username || u.password || u.search || u.hash)
    throw badRequest('destination.endpoint must not carry credentials, a query or a fragment', [
      { field: 'destination.endpoint', message: 'bare origin' },
    ]);
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(s3.bucket))
    throw badRequest('destination.bucket is not a valid bucket name', [
      { field: 'destination.bucket', message: 'invalid' },
    ]);
  if (!/^[a-z0-9-]{1,40}$/.test(s3.region))
    throw badRequest('destination.region is not a region name', [
      { field: 'destination.region', message: 'invalid' },
    ]);
  if (!/^[A-Za-z0-9_./-]{0,200}$/.test(s3.prefix) || s3.prefix.includes('..'))
    throw badRequest('destination.prefix may hold letters, digits, _ . / - only', [
      { field: 'destination.prefix', message: 'invalid' },
    ]);
  if (!/^[A-Za-z0-9_+/=-]{3,128}$/.test(s3.access_key_id))
    throw badRequest('destination.access_key_id is invalid', [
      { field: 'destination.access_key_id', message: 'invalid' },
    ]);
  if (!s3.secret_access_key && !hasStoredSecret)
    throw badRequest('destination.secret_access_key is required', [
      { field: 'destination.secret_access_key', message: 'required' },
    ]);
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

async function checkSource(env: Services, appId: string, s: Source): Promise<void> {
  if (s.type === 'database') {
    if (!(await isDatabaseOfApp(env.db, appId, s.database_id)))
      throw badRequest('source.database_id is not a database of this app', [
        { field: 'source.database_id', message: 'unknown' },
      ]);
  } else if (!VOLUME_KEY.test(s.volume)) {
    throw badRequest('source.volume must be a volume name as the compose file writes it', [
      { field: 'source.volume', message: 'invalid' },
    ]);
  }
}

export function checkKeep(k: number): void {
  if (!Number.isInteger(k) || k < 1 || k > 365)
    throw badRequest('keep_last must be an integer from 1 to 365', [
      { field: 'keep_last', message: '1..365' },
    ]);
}

export async function createConfig(
  env: Services,
  appId: string,
  input: Required<Pick<ConfigInput, 'source' | 'schedule' | 'keep_last'>> & ConfigInput,
): Promise<BackupConfigTable> {
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
  await insertConfig(env.db, row);
  return row;
}

/**
 * Whether a change lowers keep_last or changes the destination or the source (what a step-up
 * guards). A destination given again as it is stored is no change; a new secret is one.
 */
export function patchNeedsStepUp(cur: BackupConfigTable, input: ConfigInput): boolean {
  if (input.keep_last !== undefined && input.keep_last < cur.keep_last) return true;
  if (input.source !== undefined && canonical(input.source) !== canonical(JSON.parse(cur.source)))
    return true;
  if (input.destination !== undefined) {
    const { secret_access_key, ...rest } = input.destination as Destination & { secret_access_key?: string };
    if (secret_access_key !== undefined) return true;
    const given =
      rest.type === 's3'
        ? { ...rest, prefix: rest.prefix ?? '', path_style: rest.path_style ?? false }
        : rest;
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

export async function updateConfig(
  env: Services,
  appId: string,
  id: string,
  input: ConfigInput,
): Promise<BackupConfigTable> {
  const cur = await getConfig(env.db, appId, id);
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
  if (input.destination !== undefined)
    Object.assign(patch, await storedDestination(env, input.destination, cur.secret_sealed, id));
  await updateConfigRow(env.db, id, patch);
  return getConfig(env.db, appId, id);
}

/**
 * The stored form of a destination an operator sends: local, or S3 probed with the new secret (or
 * the sealed one, bound to `bindingId`). `secret_sealed` is absent when the secret stays as it is.
 */
export async function storedDestination(
  env: Services,
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
