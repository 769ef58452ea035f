// The views the API answers with: a config (its secret never, only whether one is set), a run, a restore.
import type { Services } from '../http/handler.js';
import type { BackupConfigTable, BackupRestoreTable, BackupRunTable } from '../db/schema.js';
import type { Destination, Source } from './config.js';
import { lastRun } from './store.js';

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
  return {
    id: r.id,
    run_id: r.run_id,
    status: r.status,
    error: r.error,
    started_at: r.started_at,
    finished_at: r.finished_at,
  };
}

export async function configView(env: Services, r: BackupConfigTable): Promise<ConfigView> {
  const last = await lastRun(env.db, r.id);
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
