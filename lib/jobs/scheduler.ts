// Starts jobs at their due times. One timer, set for the earliest next due time of every enabled
// job (at most a minute away), so the control plane does nothing between runs. At each wake, every
// job's due times since the last one it handled are claimed in one transaction with the runs that
// record them (lib/jobs/store.ts claimDue): no due time runs twice, even across restarts, and none
// is lost silently. The newest is run (or skipped by the overlap policy); older ones, missed
// while the control plane was down or late past `lateMs`, are recorded `skipped` with the reason.
import type { Services } from '../http/handler.js';
import { nowIso } from '../db/index.js';
import type { JobRunTable } from '../db/schema.js';
import { activeRuns, claimDue, enabledJobs, getRunRow, updateRun, type ScheduledJob } from './store.js';
import { LIMITS, toJob, toRun } from './model.js';
import { dueTimes, nextDue } from './schedule.js';
import { liveTarget, TargetError } from './target.js';
import { runRow } from './jobs.js';
import type { RunContext } from './runner.js';
import { Preparer, type Prepared } from './prepare.js';

type Env = Pick<Services, 'db' | 'engine' | 'config' | 'log' | 'now' | 'runs'>;

export interface SchedulerOptions {
  /** Longest sleep between wakes (the timer is set again after it). */
  maxSleepMs?: number;
  /** A due time the scheduler reaches later than this (a stalled process) is skipped, not run. */
  lateMs?: number;
}

/** Due times walked per job and wake; a longer backlog is walked over the next wakes. */
const WALK = 1500;
/** How long before a due time its one-offs are made (on one host), so that only the start is left. */
export const PREPARE_LEAD_MS = 15_000;

export class JobScheduler {
  private timer: NodeJS.Timeout | null = null;
  private prepTimer: NodeJS.Timeout | null = null;
  private preparing: Promise<unknown> = Promise.resolve();
  private readonly preparer: Preparer;
  private ticking: Promise<unknown> | null = null;
  private again = false;
  private stopped = true;
  private bootAt = 0;
  private readonly maxSleepMs: number;
  private readonly lateMs: number;

  constructor(
    private readonly env: Env,
    opts: SchedulerOptions = {},
  ) {
    this.maxSleepMs = opts.maxSleepMs ?? 60_000;
    this.lateMs = opts.lateMs ?? 60_000;
    this.preparer = new Preparer(env);
  }

  /** Due times up to now that no running process handled were missed while it was down. */
  start(): void {
    this.stopped = false;
    this.bootAt = this.env.now();
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.prepTimer) clearTimeout(this.prepTimer);
    this.timer = this.prepTimer = null;
    await this.ticking;
    await this.preparing;
    await this.preparer.clear();
  }

  /** Jobs changed: their next due times are read again now. */
  poke(): void {
    if (!this.stopped) this.wake();
  }

  private wake(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.tick(this.env.now())
      .catch((e) => {
        this.env.log.warn({ err: String(e) }, 'job scheduler tick failed');
        return this.env.now() + 5_000;
      })
      .then((next) => {
        this.ticking = null;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          return this.wake();
        }
        const delay = Math.max(0, Math.min(next - this.env.now(), this.maxSleepMs));
        this.timer = setTimeout(() => this.wake(), delay);
        this.timer.unref();
        this.armPrepare(next);
      });
  }

  /** On one host, the one-offs of the next due time are made PREPARE_LEAD_MS before it. */
  private armPrepare(next: number): void {
    if (this.env.runs.place.kind !== 'host' || !Number.isFinite(next)) return;
    if (this.prepTimer) clearTimeout(this.prepTimer);
    const delay = Math.max(0, Math.min(next - PREPARE_LEAD_MS - this.env.now(), this.maxSleepMs));
    this.prepTimer = setTimeout(() => {
      this.prepTimer = null;
      if (this.stopped) return;
      this.preparing = this.preparing
        .then(async () =>
          this.preparer.prepare(await enabledJobs(this.env.db), this.env.now(), PREPARE_LEAD_MS),
        )
        .catch((e) => this.env.log.warn({ err: String(e) }, 'making runs ahead of their due time failed'));
    }, delay);
    this.prepTimer.unref();
  }

  /** Handles every job's due times up to `now`; answers the earliest next due time. */
  async tick(now: number): Promise<number> {
    let next = Infinity;
    for (const row of await enabledJobs(this.env.db)) {
      try {
        next = Math.min(next, await this.handle(row, now));
      } catch (e) {
        this.env.log.warn({ job: row.id, err: String(e) }, 'a job could not be scheduled');
      }
    }
    return next;
  }

  private async handle(job: ScheduledJob, now: number): Promise<number> {
    const after = Date.parse(job.last_scheduled_at ?? job.created_at);
    const { times, more } = dueTimes(job.schedule, job.timezone, after, now, WALK);
    if (!times.length) return nextDue(job.schedule, job.timezone, after) ?? Infinity;
    const latest = times.at(-1)!;
    const runIt = !more && latest > this.bootAt && now - latest <= this.lateMs;
    const missed = runIt ? times.slice(0, -1) : times;
    const rows = this.missedRows(job, missed, now);
    let due: JobRunTable | null = null;
    let made: Prepared | null = null;
    if (runIt) {
      due = await this.dueRow(job, latest, now);
      made = await this.preparer.take(job, latest);
      if (made && due.status === 'queued') due = { ...due, id: made.runId };
      else if (made) await this.preparer.drop(made);
      rows.push(due);
    }
    if (!(await claimDue(this.env.db, job, nowIso(latest), rows))) {
      if (made && due?.status === 'queued') await this.preparer.drop(made);
      return now + 1_000;
    }
    const ctx: RunContext = {
      app: { id: job.app_id, name: job.app_name },
      job: { id: job.id, name: job.name },
    };
    for (const r of rows) if (r !== due || r.status !== 'queued') this.env.runs.publish(toRun(r), ctx);
    if (due?.status === 'queued') void this.startRun(job, due, ctx, made);
    return nextDue(job.schedule, job.timezone, latest) ?? Infinity;
  }

  /** The run of the newest due time: queued, or skipped when the overlap policy says so. */
  private async dueRow(job: ScheduledJob, at: number, now: number): Promise<JobRunTable> {
    const j = toJob(job);
    const row = runRow(
      job.app_id,
      {
        jobId: job.id,
        trigger: 'schedule',
        command: j.command,
        service: j.service,
        deploymentId: null,
        timeoutS: j.timeout_s,
        scheduledFor: nowIso(at),
      },
      now,
    );
    if (j.concurrency !== 'forbid') return row;
    const active = await activeRuns(this.env.db, job.id);
    if (!active.length) return row;
    return skipped(row, `run ${active[0]!.id} of this job was still running (concurrency: forbid)`, now);
  }

  /** Due times nobody ran: the newest ones one row each, the rest folded into one. */
  private missedRows(job: ScheduledJob, times: number[], now: number): JobRunTable[] {
    if (!times.length) return [];
    const why = (t: number) =>
      t <= this.bootAt
        ? `the control plane was not running at ${nowIso(t)}`
        : `the scheduler reached it ${Math.round((now - t) / 1000)} s late (more than ${Math.round(this.lateMs / 1000)} s)`;
    const j = toJob(job);
    // Ids sort by time: each record gets its own millisecond, oldest first, so history reads in order.
    let stamp = now - times.length - 1;
    const base = (at: number | null) =>
      runRow(
        job.app_id,
        {
          jobId: job.id,
          trigger: 'schedule',
          command: j.command,
          service: j.service,
          deploymentId: null,
          timeoutS: j.timeout_s,
          scheduledFor: at === null ? null : nowIso(at),
        },
        ++stamp,
      );
    const keep = times.slice(-LIMITS.missedRecorded);
    const folded = times.slice(0, times.length - keep.length);
    const out: JobRunTable[] = [];
    if (folded.length)
      out.push(
        skipped(
          base(null),
          `${folded.length} due times from ${nowIso(folded[0]!)} to ${nowIso(folded.at(-1)!)} were missed: ${why(folded[0]!)}`,
          now,
        ),
      );
    for (const t of keep) out.push(skipped(base(t), why(t), now));
    return out;
  }

  /**
   * Starts a claimed run: with the one-off made ahead for it, or from the live service now. A run
   * with nothing to run yet (the app never deployed) is skipped, any other failure to start fails it.
   */
  private async startRun(
    job: ScheduledJob,
    row: JobRunTable,
    ctx: RunContext,
    made: Prepared | null,
  ): Promise<void> {
    const j = toJob(job);
    try {
      if (j.concurrency === 'replace')
        for (const r of await activeRuns(this.env.db, job.id))
          if (r.id !== row.id)
            await this.env.runs.cancel(r.id, `replaced by run ${row.id} (concurrency: replace)`);
      const target = made?.target ?? (await liveTarget(this.env, ctx.app, j.service));
      const service = target.kind === 'host' ? target.template.service : target.service;
      const deployment = target.kind === 'host' ? target.template.deploymentId : target.deploymentId;
      const ready = await updateRun(this.env.db, row.id, ['queued'], { service, deployment_id: deployment });
      if (!ready) {
        if (made) await this.preparer.drop(made);
        return;
      }
      await this.env.runs.run(ready, target, ctx, made?.engineId);
    } catch (e) {
      if (made) await this.preparer.drop(made);
      const never = e instanceof TargetError && e.kind === 'never_deployed';
      const done = await updateRun(this.env.db, row.id, ['queued'], {
        status: never ? 'skipped' : 'failed',
        reason: `could not start: ${(e as Error).message}`.slice(0, 1000),
        finished_at: nowIso(this.env.now()),
      });
      const now = done ?? (await getRunRow(this.env.db, row.id));
      if (done && now) this.env.runs.publish(toRun(now), ctx);
    }
  }
}

function skipped(row: JobRunTable, reason: string, now: number): JobRunTable {
  return { ...row, status: 'skipped', reason, finished_at: nowIso(now) };
}
