// The vocabulary of jobs and runs, and their API shapes built from rows.
import type { JobRunTable, JobTable } from '../db/schema.js';

/** What a due time does while the job's previous run still runs. */
export const JOB_CONCURRENCY = ['forbid', 'replace', 'allow'] as const;
export type JobConcurrency = (typeof JOB_CONCURRENCY)[number];

export const RUN_TRIGGERS = ['schedule', 'manual', 'release', 'command'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

export const ACTIVE_RUN_STATUSES = ['queued', 'running'] as const;
export const TERMINAL_RUN_STATUSES = [
  'succeeded',
  'failed',
  'timed_out',
  'canceled',
  'skipped',
  'interrupted',
] as const;
export const RUN_STATUSES = [...ACTIVE_RUN_STATUSES, ...TERMINAL_RUN_STATUSES] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export type TerminalRunStatus = (typeof TERMINAL_RUN_STATUSES)[number];

export const isTerminalRun = (s: string): s is TerminalRunStatus =>
  (TERMINAL_RUN_STATUSES as readonly string[]).includes(s);

/** Bounds of what a job or a command may ask for. */
export const LIMITS = {
  timeoutS: { min: 1, max: 7 * 86_400, job: 3600, command: 3600, release: 600 },
  command: { args: 64, arg: 4096, total: 16 * 1024 },
  jobsPerApp: 100,
  /** Finished runs kept per job, and one-off and release runs kept per app; older ones go. */
  keepRuns: 100,
  /** Due times recorded one by one as skipped after downtime; more are folded into one. */
  missedRecorded: 60,
} as const;

export const JOB_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export interface Run {
  id: string;
  app_id: string;
  job_id: string | null;
  command: string[];
  service: string | null;
  deployment_id: string | null;
  status: RunStatus;
  reason: string | null;
  exit_code: number | null;
  trigger: RunTrigger;
  timeout_s: number;
  scheduled_for: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface Job {
  id: string;
  app_id: string;
  name: string;
  schedule: string;
  timezone: string;
  command: string[];
  service: string | null;
  timeout_s: number;
  concurrency: JobConcurrency;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

export function toRun(row: JobRunTable): Run {
  return {
    id: row.id,
    app_id: row.app_id,
    job_id: row.job_id,
    command: JSON.parse(row.command) as string[],
    service: row.service,
    deployment_id: row.deployment_id,
    status: row.status as RunStatus,
    reason: row.reason,
    exit_code: row.exit_code,
    trigger: row.trigger as RunTrigger,
    timeout_s: row.timeout_s,
    scheduled_for: row.scheduled_for,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}

export function toJob(row: JobTable): Job {
  return {
    id: row.id,
    app_id: row.app_id,
    name: row.name,
    schedule: row.schedule,
    timezone: row.timezone,
    command: JSON.parse(row.command) as string[],
    service: row.service,
    timeout_s: row.timeout_s,
    concurrency: row.concurrency as JobConcurrency,
    enabled: row.enabled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
