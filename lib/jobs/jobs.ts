// What the API does with jobs and runs: create, change and delete jobs (checked before they are
// saved), show them with their next due time and last run, start a run now or a one-off command.
import type { Services } from '../http/handler.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import { newId } from '../crypto/random.js';
import { nowIso } from '../db/index.js';
import type { JobRunTable, JobTable } from '../db/schema.js';
import type { App } from '../apps/model.js';
import {
  activeRuns,
  countJobs,
  deleteJobRow,
  findJobRow,
  getJobRow,
  getRun,
  insertJob,
  insertRun,
  isUniqueViolation,
  lastRuns,
  listJobs,
  updateJobRow,
} from './store.js';
import {
  JOB_NAME,
  LIMITS,
  toJob,
  toRun,
  type Job,
  type JobConcurrency,
  type Run,
  type RunTrigger,
} from './model.js';
import { describeSchedule, nextDue, parseJobSchedule } from './schedule.js';
import { liveTarget, targetConflict, type Target } from './target.js';
import type { RunContext } from './runner.js';
import { secretEnv } from '../apps/env.js';
import { masker } from '../util/mask.js';

type Env = Pick<Services, 'db' | 'engine' | 'bus' | 'config' | 'log' | 'now' | 'runs' | 'jobScheduler'>;

export interface JobInput {
  name?: string;
  schedule?: string;
  command?: string[];
  service?: string | null;
  timezone?: string;
  timeout_s?: number;
  concurrency?: JobConcurrency;
  enabled?: boolean;
}

export interface JobView extends Job {
  schedule_description: string;
  next_run_at: string | null;
  last_run: Run | null;
}

/** An exec-form command within its bounds; 400 naming the field otherwise. */
export function checkCommand(command: string[], field = 'command'): void {
  const bad = (message: string) => badRequest(`${field}: ${message}`, [{ field, message }]);
  if (!command.length) throw bad('give at least the program to run');
  if (command.length > LIMITS.command.args) throw bad(`at most ${LIMITS.command.args} arguments`);
  if (!command[0]) throw bad('the program to run cannot be empty');
  let total = 0;
  for (const arg of command) {
    if (arg.includes('\0')) throw bad('an argument cannot contain a NUL byte');
    if (arg.length > LIMITS.command.arg)
      throw bad(`an argument is longer than ${LIMITS.command.arg} characters`);
    total += arg.length;
  }
  if (total > LIMITS.command.total) throw bad(`longer than ${LIMITS.command.total} characters in all`);
}

function checkJob(j: Required<Pick<JobInput, 'name' | 'schedule' | 'command' | 'timezone'>>): void {
  if (!JOB_NAME.test(j.name))
    throw badRequest(
      'name must be lower-case letters, digits and dashes (1-63, starting with a letter or digit)',
      [{ field: 'name', message: 'invalid' }],
    );
  parseJobSchedule(j.schedule, j.timezone);
  checkCommand(j.command);
}

export async function viewJobs(env: Pick<Services, 'db' | 'now'>, jobs: Job[]): Promise<JobView[]> {
  const last = await lastRuns(
    env.db,
    jobs.map((j) => j.id),
  );
  return jobs.map((j) => {
    const next = j.enabled ? nextDue(j.schedule, j.timezone, env.now()) : null;
    return {
      ...j,
      schedule_description: describeSchedule(j.schedule, j.timezone),
      next_run_at: next === null ? null : nowIso(next),
      last_run: last.get(j.id) ?? null,
    };
  });
}

export async function getJob(env: Pick<Services, 'db'>, appId: string, id: string): Promise<Job> {
  const row = await getJobRow(env.db, appId, id);
  if (!row) throw notFound('No such job');
  return toJob(row);
}

/** A job's settings as an audit entry records them (lib/revert/state.ts), or null when it is gone. */
export async function jobState(
  env: Pick<Services, 'db'>,
  id: string,
): Promise<(JobInput & { app_id: string }) | null> {
  const row = await findJobRow(env.db, id);
  if (!row) return null;
  const j = toJob(row);
  return {
    app_id: j.app_id,
    name: j.name,
    schedule: j.schedule,
    timezone: j.timezone,
    command: j.command,
    service: j.service,
    timeout_s: j.timeout_s,
    concurrency: j.concurrency,
    enabled: j.enabled,
  };
}

export async function appJobs(env: Pick<Services, 'db' | 'now'>, appId: string): Promise<JobView[]> {
  return viewJobs(env, await listJobs(env.db, appId));
}

export async function createJob(env: Env, appId: string, input: JobInput): Promise<Job> {
  const j = {
    name: input.name!,
    schedule: input.schedule!,
    command: input.command!,
    timezone: input.timezone ?? 'UTC',
  };
  checkJob(j);
  if ((await countJobs(env.db, appId)) >= LIMITS.jobsPerApp)
    throw conflict(`An app has at most ${LIMITS.jobsPerApp} jobs`);
  const now = nowIso(env.now());
  const row: JobTable = {
    id: newId(env.now()),
    app_id: appId,
    name: j.name,
    schedule: j.schedule.trim().split(/\s+/).join(' '),
    timezone: j.timezone,
    command: JSON.stringify(j.command),
    service: input.service ?? null,
    timeout_s: input.timeout_s ?? LIMITS.timeoutS.job,
    concurrency: input.concurrency ?? 'forbid',
    enabled: input.enabled === false ? 0 : 1,
    last_scheduled_at: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await insertJob(env.db, row);
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`This app already has a job named "${j.name}"`);
    throw e;
  }
  env.jobScheduler?.poke();
  return toJob(row);
}

export async function updateJob(env: Env, appId: string, id: string, input: JobInput): Promise<Job> {
  const cur = await getJob(env, appId, id);
  const next = { ...cur, ...stripUndefined(input) };
  checkJob({ name: next.name, schedule: next.schedule, command: next.command, timezone: next.timezone });
  const now = nowIso(env.now());
  // A new schedule, zone, or a job enabled again counts from now: the due times it never had are not missed.
  const restart =
    next.schedule !== cur.schedule || next.timezone !== cur.timezone || (next.enabled && !cur.enabled);
  try {
    await updateJobRow(env.db, appId, id, {
      name: next.name,
      schedule: next.schedule.trim().split(/\s+/).join(' '),
      timezone: next.timezone,
      command: JSON.stringify(next.command),
      service: next.service,
      timeout_s: next.timeout_s,
      concurrency: next.concurrency,
      enabled: next.enabled ? 1 : 0,
      updated_at: now,
      ...(restart ? { last_scheduled_at: now } : {}),
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`This app already has a job named "${next.name}"`);
    throw e;
  }
  env.jobScheduler?.poke();
  return getJob(env, appId, id);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Deletes a job; its runs in flight are canceled first, its history goes with it. */
export async function deleteJob(env: Env, appId: string, id: string): Promise<void> {
  await getJob(env, appId, id);
  for (const r of await activeRuns(env.db, id)) await env.runs.cancel(r.id, 'its job was deleted');
  if (!(await deleteJobRow(env.db, appId, id))) throw notFound('No such job');
  env.jobScheduler?.poke();
}

/** A queued run's row. */
export function runRow(
  appId: string,
  fields: {
    jobId: string | null;
    trigger: RunTrigger;
    command: string[];
    service: string | null;
    deploymentId: string | null;
    timeoutS: number;
    scheduledFor?: string | null;
  },
  now: number,
): JobRunTable {
  return {
    id: newId(now),
    app_id: appId,
    job_id: fields.jobId,
    trigger: fields.trigger,
    status: 'queued',
    reason: null,
    command: JSON.stringify(fields.command),
    service: fields.service,
    deployment_id: fields.deploymentId,
    image: null,
    container_id: null,
    service_id: null,
    exit_code: null,
    timeout_s: fields.timeoutS,
    scheduled_for: fields.scheduledFor ?? null,
    created_at: nowIso(now),
    started_at: null,
    finished_at: null,
  };
}

const targetService = (t: Target) => (t.kind === 'host' ? t.template.service : t.service);
const targetDeployment = (t: Target) => (t.kind === 'host' ? t.template.deploymentId : t.deploymentId);

/** Inserts a queued run of `target` and starts it in the background; answers the queued run. */
export async function launch(
  env: Env,
  target: Target,
  fields: Omit<Parameters<typeof runRow>[1], 'service' | 'deploymentId'>,
  ctx: RunContext,
): Promise<Run> {
  const row = runRow(
    ctx.app.id,
    { ...fields, service: targetService(target), deploymentId: targetDeployment(target) },
    env.now(),
  );
  await insertRun(env.db, row);
  env.runs.publish(toRun(row), ctx);
  void env.runs
    .run(row, target, ctx)
    .catch((e) => env.log.warn({ run: row.id, err: String(e) }, 'a run failed to run'));
  return toRun(row);
}

/**
 * Run now: 409 when the app has nothing to run yet, or (concurrency `forbid`) while a run of the
 * job is in flight; `replace` cancels those first.
 */
export async function runJobNow(env: Env, app: Pick<App, 'id' | 'name'>, job: Job): Promise<Run> {
  const target = await liveTarget(env, app, job.service).catch((e) => Promise.reject(targetConflict(e)));
  const active = await activeRuns(env.db, job.id);
  if (active.length && job.concurrency === 'forbid')
    throw conflict(
      `Run ${active[0]!.id} of this job is still running (concurrency: forbid); cancel it or wait`,
    );
  if (job.concurrency === 'replace')
    for (const r of active)
      await env.runs.cancel(r.id, 'replaced by a run started by hand (concurrency: replace)');
  return launch(
    env,
    target,
    { jobId: job.id, trigger: 'manual', command: job.command, timeoutS: job.timeout_s },
    { app: { id: app.id, name: app.name }, job: { id: job.id, name: job.name } },
  );
}

/** A one-off command against the running version. */
export async function runCommand(
  env: Env,
  app: Pick<App, 'id' | 'name'>,
  input: { command: string[]; service?: string | null; timeout_s?: number },
): Promise<Run> {
  checkCommand(input.command);
  const target = await liveTarget(env, app, input.service ?? null).catch((e) =>
    Promise.reject(targetConflict(e)),
  );
  return launch(
    env,
    target,
    {
      jobId: null,
      trigger: 'command',
      command: input.command,
      timeoutS: input.timeout_s ?? LIMITS.timeoutS.command,
    },
    { app: { id: app.id, name: app.name }, job: null },
  );
}

export async function getRunOf(env: Pick<Services, 'db'>, appId: string, id: string): Promise<Run> {
  const run = await getRun(env.db, appId, id);
  if (!run) throw notFound('No such run');
  return run;
}

/** Cancels a run in flight; 409 when it had ended. */
export async function cancelRun(env: Env, appId: string, id: string): Promise<Run> {
  const run = await getRunOf(env, appId, id);
  if (run.status !== 'queued' && run.status !== 'running')
    throw conflict(`The run already ended (${run.status})`);
  const done = await env.runs.cancel(id, 'canceled by an operator');
  if (!done) throw conflict('The run ended meanwhile');
  return done;
}

/** A command as an audit entry may show it: the app's secret values masked. */
export async function maskedCommand(
  env: Pick<Services, 'db' | 'sealer'>,
  appId: string,
  command: string[],
): Promise<string[]> {
  const secrets = await secretEnv(env.db, env.sealer, appId).catch(() => new Map<string, string>());
  const mask = masker(secrets.values());
  return command.map(mask);
}
