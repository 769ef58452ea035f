// Every query of jobs and runs. Exclusion is the database's job: a job's due time is claimed by a
// conditional update of `last_scheduled_at` in the same transaction that inserts its run (unique
// per job and due time), and a run changes status only from the status it was read in.
import type { Db } from '../db/index.js';
import { isUniqueViolation } from '../db/index.js';
import type { JobRunTable, JobTable } from '../db/schema.js';
import { toDeployment, type Deployment } from '../apps/deployment.js';
import {
  ACTIVE_RUN_STATUSES,
  LIMITS,
  TERMINAL_RUN_STATUSES,
  toJob,
  toRun,
  type Job,
  type Run,
} from './model.js';

export { isUniqueViolation };

// Jobs.

export async function insertJob(db: Db, row: JobTable): Promise<void> {
  await db.insertInto('jobs').values(row).execute();
}

export async function getJobRow(db: Db, appId: string, id: string): Promise<JobTable | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', id)
    .where('app_id', '=', appId)
    .executeTakeFirst();
}

/** A job by its id alone (an audit entry names it so). */
export async function findJobRow(db: Db, id: string): Promise<JobTable | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listJobs(db: Db, appId: string): Promise<Job[]> {
  const rows = await db.selectFrom('jobs').selectAll().where('app_id', '=', appId).orderBy('name').execute();
  return rows.map(toJob);
}

export async function countJobs(db: Db, appId: string): Promise<number> {
  const r = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export async function updateJobRow(
  db: Db,
  appId: string,
  id: string,
  set: Partial<Omit<JobTable, 'id' | 'app_id' | 'created_at'>>,
): Promise<boolean> {
  const r = await db
    .updateTable('jobs')
    .set(set)
    .where('id', '=', id)
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteJobRow(db: Db, appId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('jobs').where('id', '=', id).where('app_id', '=', appId).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

export type ScheduledJob = JobTable & { app_name: string };

/** Enabled jobs of apps that are not being deleted: what the scheduler reads at each wake. */
export async function enabledJobs(db: Db): Promise<ScheduledJob[]> {
  return db
    .selectFrom('jobs')
    .innerJoin('apps', 'apps.id', 'jobs.app_id')
    .selectAll('jobs')
    .select('apps.name as app_name')
    .where('jobs.enabled', '=', 1)
    .where('apps.deleting_at', 'is', null)
    .orderBy('jobs.id')
    .execute();
}

/**
 * Claims a job's due times up to `latest` and records their runs, in one transaction: false (and
 * nothing written) when another tick moved `last_scheduled_at` first.
 */
export async function claimDue(
  db: Db,
  job: Pick<JobTable, 'id' | 'last_scheduled_at'>,
  latest: string,
  runs: JobRunTable[],
): Promise<boolean> {
  try {
    return await db.transaction().execute(async (tx) => {
      const r = await tx
        .updateTable('jobs')
        .set({ last_scheduled_at: latest })
        .where('id', '=', job.id)
        .where('enabled', '=', 1)
        .where((eb) =>
          job.last_scheduled_at === null
            ? eb('last_scheduled_at', 'is', null)
            : eb('last_scheduled_at', '=', job.last_scheduled_at),
        )
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return false;
      for (let i = 0; i < runs.length; i += 100)
        await tx
          .insertInto('job_runs')
          .values(runs.slice(i, i + 100))
          .execute();
      return true;
    });
  } catch (e) {
    // The run of that due time exists already (unique per job and due time): claimed elsewhere.
    if (isUniqueViolation(e)) return false;
    throw e;
  }
}

// Runs.

export async function insertRun(db: Db, row: JobRunTable): Promise<void> {
  await db.insertInto('job_runs').values(row).execute();
}

export async function getRunRow(db: Db, id: string): Promise<JobRunTable | undefined> {
  return db.selectFrom('job_runs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function getRun(db: Db, appId: string, id: string): Promise<Run | null> {
  const row = await db
    .selectFrom('job_runs')
    .selectAll()
    .where('id', '=', id)
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row ? toRun(row) : null;
}

/** Newest first; `cursor` is the last id of the previous page. */
export async function listRuns(
  db: Db,
  where: { appId: string; jobId?: string },
  opts: { cursor?: string; limit: number },
): Promise<{ items: Run[]; next_cursor?: string }> {
  let q = db.selectFrom('job_runs').selectAll().where('app_id', '=', where.appId);
  if (where.jobId) q = q.where('job_id', '=', where.jobId);
  if (opts.cursor) q = q.where('id', '<', opts.cursor);
  const rows = await q
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const items = rows.slice(0, opts.limit).map(toRun);
  return rows.length > opts.limit ? { items, next_cursor: items.at(-1)!.id } : { items };
}

/** The newest run of each job (for the job listing). */
export async function lastRuns(db: Db, jobIds: string[]): Promise<Map<string, Run>> {
  const out = new Map<string, Run>();
  for (const id of jobIds) {
    const row = await db
      .selectFrom('job_runs')
      .selectAll()
      .where('job_id', '=', id)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (row) out.set(id, toRun(row));
  }
  return out;
}

/** Queued and running runs: of one job, or (null) of every app. */
export async function activeRuns(db: Db, jobId: string | null): Promise<JobRunTable[]> {
  let q = db
    .selectFrom('job_runs')
    .selectAll()
    .where('status', 'in', [...ACTIVE_RUN_STATUSES]);
  if (jobId) q = q.where('job_id', '=', jobId);
  return q.orderBy('id').execute();
}

/** Moves a run on, only from one of the statuses in `from`; the updated row, or null when it had moved. */
export async function updateRun(
  db: Db,
  id: string,
  from: readonly string[],
  set: Partial<Omit<JobRunTable, 'id' | 'app_id' | 'job_id'>>,
): Promise<JobRunTable | null> {
  const r = await db
    .updateTable('job_runs')
    .set(set)
    .where('id', '=', id)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) return null;
  return (await getRunRow(db, id)) ?? null;
}

/** Keeps the newest finished runs of a job (or the one-off runs of an app); their logs go with the rest. */
export async function pruneRuns(db: Db, where: { appId: string; jobId: string | null }): Promise<number> {
  let q = db
    .selectFrom('job_runs')
    .select('id')
    .where('app_id', '=', where.appId)
    .where('status', 'in', [...TERMINAL_RUN_STATUSES]);
  q = where.jobId ? q.where('job_id', '=', where.jobId) : q.where('job_id', 'is', null);
  const old = await q.orderBy('id', 'desc').offset(LIMITS.keepRuns).limit(1000).execute();
  if (!old.length) return 0;
  const ids = old.map((r) => r.id);
  await db.deleteFrom('run_logs').where('run_id', 'in', ids).execute();
  await db.deleteFrom('job_runs').where('id', 'in', ids).execute();
  return ids.length;
}

// Logs.

export interface RunLogRow {
  run_id: string;
  seq: number;
  at: string;
  stream: string;
  line: string;
}

export async function insertRunLogs(db: Db, lines: RunLogRow[]): Promise<void> {
  for (let i = 0; i < lines.length; i += 200)
    await db
      .insertInto('run_logs')
      .values(lines.slice(i, i + 200))
      .execute();
}

export async function readRunLogs(
  db: Db,
  runId: string,
  opts: { after?: number; limit: number },
): Promise<{ items: Array<{ seq: number; at: string; stream: string; line: string }>; next_after?: number }> {
  let q = db.selectFrom('run_logs').select(['seq', 'at', 'stream', 'line']).where('run_id', '=', runId);
  if (opts.after !== undefined) q = q.where('seq', '>', opts.after);
  const rows = await q
    .orderBy('seq')
    .limit(opts.limit + 1)
    .execute();
  const items = rows.slice(0, opts.limit);
  return rows.length > opts.limit ? { items, next_after: items.at(-1)!.seq } : { items };
}

/** The log's last sequence number, and how many of its lines are the run's own output. */
export async function logCounts(db: Db, runId: string): Promise<{ seq: number; output: number }> {
  const r = await db
    .selectFrom('run_logs')
    .select((eb) => [
      eb.fn.max<number>('seq').as('seq'),
      eb.fn.count<number>('seq').filterWhere('stream', 'in', ['stdout', 'stderr']).as('output'),
    ])
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return { seq: Number(r?.seq ?? 0), output: Number(r?.output ?? 0) };
}

// What a run runs.

/** The app's current deployment: its newest succeeded one. */
export async function currentDeployment(db: Db, appId: string): Promise<Deployment | null> {
  const row = await db
    .selectFrom('deployments')
    .selectAll()
    .where('app_id', '=', appId)
    .where('status', '=', 'succeeded')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? toDeployment(row) : null;
}

/** The names a run's events carry: its app's and its job's. */
export async function runOwners(
  db: Db,
  row: Pick<JobRunTable, 'app_id' | 'job_id'>,
): Promise<{ app: { id: string; name: string }; job: { id: string; name: string } | null }> {
  const app = await db.selectFrom('apps').select('name').where('id', '=', row.app_id).executeTakeFirst();
  const job = row.job_id
    ? await db.selectFrom('jobs').select('name').where('id', '=', row.job_id).executeTakeFirst()
    : undefined;
  return {
    app: { id: row.app_id, name: app?.name ?? '' },
    job: row.job_id ? { id: row.job_id, name: job?.name ?? '' } : null,
  };
}

/** Whether a run exists (the `run:<id>` topic names one). */
export async function runExists(db: Db, id: string): Promise<boolean> {
  const r = await db.selectFrom('job_runs').select('id').where('id', '=', id).executeTakeFirst();
  return r !== undefined;
}

/** The app a run belongs to (its topic is read with that app's access); null: no such run. */
export async function runApp(db: Db, id: string): Promise<string | null> {
  const r = await db.selectFrom('job_runs').select('app_id').where('id', '=', id).executeTakeFirst();
  return r ? r.app_id : null;
}
