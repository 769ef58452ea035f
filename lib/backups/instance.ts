// The instance backup's configuration (like an app backup's, without a source) and the views of
// it and its runs. A run of it is instance-run.ts; its verification, instance-verify.ts; its
// retention and recovery share retention.ts and recovery.ts with app backups.
import type { Services } from '../http/handler.js';
import type { InstanceBackupRunTable, InstanceBackupTable } from '../db/schema.js';
import {
  canonical,
  checkKeep,
  storedDestination,
  parseSchedule,
  type ConfigInput,
  type Destination,
} from './config.js';
import { getRun, INSTANCE_BACKUP_ID, listRuns, readConfig, saveConfig } from './instance-store.js';
import { iso } from './jobs.js';

export { INSTANCE_BACKUP_ID };
const DEFAULTS = { schedule: '0 3 * * *', keep_last: 7 };

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

/** The id boot loaded (lib/instance/owner.ts) and every engine object of this instance carries. */
export async function instanceId(env: Services): Promise<string> {
  return env.engine.owner.instanceId;
}

/** The configuration as stored, or the defaults (disabled, local) when none was ever saved. */
export async function currentConfig(env: Services): Promise<InstanceBackupTable> {
  const row = await readConfig(env.db);
  if (row) return row;
  const now = iso(env);
  return {
    id: INSTANCE_BACKUP_ID,
    ...DEFAULTS,
    destination: JSON.stringify({ type: 'local' }),
    secret_sealed: null,
    enabled: 0,
    last_scheduled_at: now,
    created_at: now,
    updated_at: now,
  };
}

export async function instanceConfigView(env: Services) {
  const r = await currentConfig(env);
  const [last] = await listRuns(env.db, 1);
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
export async function instancePutNeedsStepUp(env: Services, input: InstanceBackupInput): Promise<boolean> {
  const cur = await currentConfig(env);
  if (input.keep_last !== undefined && input.keep_last < cur.keep_last) return true;
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

/** Saves the fields given over the current configuration (or the defaults); validated before anything is written. */
export async function putInstanceConfig(env: Services, input: InstanceBackupInput): Promise<void> {
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
  if (input.destination !== undefined)
    Object.assign(
      next,
      await storedDestination(env, input.destination, cur.secret_sealed, INSTANCE_BACKUP_ID),
    );
  await saveConfig(env.db, next);
}

export async function listInstanceRuns(env: Services): Promise<InstanceRunView[]> {
  return (await listRuns(env.db, 500)).map(instanceRunView);
}

export function getInstanceRun(env: Services, id: string): Promise<InstanceBackupRunTable> {
  return getRun(env.db, id);
}
