// The runs in flight (state is the point, hence a class): each run waits for a slot (at most
// SVC_RUNS_MAX at once), starts its one-off, follows its output into its log, stops it at its
// timeout or when canceled, and records how it ended; its container goes, its output stays.
// A graceful stop of the control plane leaves running one-offs running: the next start finds
// them (recover) and follows them to their end, or records them `interrupted`.
import type { Services } from '../http/handler.js';
import type { JobRunTable } from '../db/schema.js';
import { nowIso } from '../db/index.js';
import { secretEnv } from '../apps/env.js';
import { masker } from '../util/mask.js';
import { sleep } from '../util/sleep.js';
import { activeRuns, getRunRow, logCounts, pruneRuns, updateRun } from './store.js';
import { toRun, type Run, type RunStatus } from './model.js';
import { RunLog, runTopic } from './log.js';
import { hostPlace, swarmPlace, type OneOffState, type Place } from './place.js';
import type { Target } from './target.js';

type Env = Pick<Services, 'db' | 'engine' | 'bus' | 'sealer' | 'config' | 'log' | 'now'>;

/** Who a run belongs to, for its events. */
export interface RunContext {
  app: { id: string; name: string };
  job: { id: string; name: string } | null;
  /** Sees every line of its log (a release command's go to its deployment's log too). */
  onLine?: (line: string, stream: string) => void;
  /** A release command: not held back by SVC_RUNS_MAX (deployments are bounded on their own). */
  unbounded?: boolean;
}

interface Stopping {
  status: 'canceled' | 'timed_out';
  reason: string;
}

interface Active {
  row: JobRunTable;
  ctx: RunContext;
  log: RunLog;
  /** Aborted by a graceful stop of the control plane: stop following, leave the one-off running. */
  detach: AbortController;
  engineId: string | null;
  stopping: Stopping | null;
  timer: NodeJS.Timeout | null;
  /** Set while it waits for a slot: wakes it (to find it canceled). */
  wake: (() => void) | null;
  /** Why its one-off could not be made or started. */
  failed: OneOffState | null;
  done: Promise<Run>;
}

const STOP_GRACE_S = 10;

export class RunService {
  private readonly active = new Map<string, Active>();
  private readonly waiting: Active[] = [];
  private used = 0;
  private stopped = false;
  readonly place: Place;

  constructor(
    private readonly env: Env,
    private readonly maxRunning: number,
  ) {
    this.place = env.config.cluster.mode === 'swarm' ? swarmPlace(env.engine) : hostPlace(env.engine);
  }

  isActive(runId: string): boolean {
    return this.active.has(runId);
  }

  /**
   * Runs a queued run to its end (its one-off made from `target`, or `made` ahead of time by the
   * scheduler); answers the finished run.
   */
  async run(row: JobRunTable, target: Target, ctx: RunContext, made?: string): Promise<Run> {
    const env = target.kind === 'host' ? target.template.env : swarmEnv(target.spec);
    const a = await this.track(row, ctx, 0, env);
    a.done = this.drive(a, target, made);
    return a.done;
  }

  /** One-offs made ahead of their run (by the scheduler): not orphans while it holds them. */
  readonly reserved = new Set<string>();

  /** Stops a run (its grace period); answers it once it ended, or null when it had ended already. */
  async cancel(runId: string, reason: string): Promise<Run | null> {
    const a = this.active.get(runId);
    if (a) {
      this.stopRun(a, { status: 'canceled', reason });
      return a.done;
    }
    const row = await getRunRow(this.env.db, runId);
    if (!row || (row.status !== 'queued' && row.status !== 'running')) return null;
    const id = row.container_id ?? row.service_id;
    if (id) {
      await this.place.stop(id, STOP_GRACE_S).catch(() => {});
      await this.place.remove(id).catch(() => {});
    }
    const done = await updateRun(this.env.db, runId, ['queued', 'running'], {
      status: 'canceled',
      reason,
      finished_at: nowIso(this.env.now()),
    });
    if (done) this.publish(toRun(done), null);
    return done ? toRun(done) : null;
  }

  /**
   * Registers a run in flight. Its log masks the app's secret values, and the values the one-off's
   * environment holds for secret keys (a deployment older than the last change of a secret).
   */
  private async track(
    row: JobRunTable,
    ctx: RunContext,
    startSeq: number,
    runEnv: string[] = [],
  ): Promise<Active> {
    const log = new RunLog(this.env.db, this.env.bus, row.id, this.env.now, startSeq, {
      app_id: row.app_id,
      service: row.service,
    });
    const secrets = await secretEnv(this.env.db, this.env.sealer, row.app_id).catch(
      () => new Map<string, string>(),
    );
    const held = runEnv.flatMap((kv) => {
      const at = kv.indexOf('=');
      return at > 0 && secrets.has(kv.slice(0, at)) ? [kv.slice(at + 1)] : [];
    });
    log.mask = masker([...secrets.values(), ...held]);
    if (ctx.onLine) log.onLine = ctx.onLine;
    const a: Active = {
      row,
      ctx,
      log,
      detach: new AbortController(),
      engineId: row.container_id ?? row.service_id,
      stopping: null,
      timer: null,
      wake: null,
      failed: null,
      done: Promise.resolve(toRun(row)),
    };
    this.active.set(row.id, a);
    return a;
  }

  private async drive(a: Active, target: Target, made?: string): Promise<Run> {
    const held = await this.slot(a);
    try {
      // Shutting down while it waited: it stays queued (the next start records it interrupted).
      if (this.stopped && !a.stopping) return await this.detached(a);
      a.engineId = made ?? null;
      if (a.stopping) return await this.finish(a, null);
      a.log.write(
        `starting: ${JSON.stringify(JSON.parse(a.row.command))} in service ${a.row.service}`,
        'system',
      );
      const id = await this.launch(a, target, made);
      if (!id) return await this.finish(a, a.failed);
      a.engineId = id;
      const image = target.kind === 'host' ? target.template.image : null;
      const moved = await updateRun(this.env.db, a.row.id, ['queued'], {
        status: 'running',
        started_at: nowIso(this.env.now()),
        image,
        ...(this.place.kind === 'host' ? { container_id: id } : { service_id: id }),
      });
      if (!moved) {
        // Finished elsewhere meanwhile (canceled before it started): nothing of it may stay.
        await this.place.remove(id).catch(() => {});
        return toRun((await getRunRow(this.env.db, a.row.id)) ?? a.row);
      }
      a.row = moved;
      this.publish(toRun(moved), a.ctx);
      this.armTimeout(a);
      if (a.stopping) await this.place.stop(id, STOP_GRACE_S).catch(() => {});
      return await this.follow(a, 0);
    } finally {
      if (held) this.release();
    }
  }

  /** Makes (unless `made`) and starts the one-off; null when it could not (a.failed says why). */
  private async launch(a: Active, target: Target, made?: string): Promise<string | null> {
    let id = made ?? null;
    try {
      await this.ensureSwept();
      id ??= await this.place.create(target, {
        id: a.row.id,
        command: JSON.parse(a.row.command) as string[],
      });
      await this.place.start(id);
      return id;
    } catch (e) {
      if (id) await this.place.remove(id).catch(() => {});
      a.engineId = null;
      a.failed = { running: false, exitCode: null, error: `could not start: ${(e as Error).message}` };
      return null;
    }
  }

  /** Waits for a free slot unless the run is unbounded; false when it took none. */
  private async slot(a: Active): Promise<boolean> {
    if (a.ctx.unbounded) return false;
    while (this.used >= this.maxRunning && !a.stopping && !this.stopped) {
      this.waiting.push(a);
      await new Promise<void>((r) => (a.wake = r));
      a.wake = null;
    }
    if (a.stopping || this.stopped) return false;
    this.used++;
    return true;
  }

  private release(): void {
    this.used--;
    const next = this.waiting.shift();
    next?.wake?.();
  }

  /** Follows the one-off until it ends; the stream may break (engine restart) and is followed again. */
  private async follow(a: Active, skip: number): Promise<Run> {
    const id = a.engineId!;
    let backoff = 1000;
    for (;;) {
      try {
        const seen = await this.place.follow(
          id,
          a.row.id,
          skip,
          (l) => a.log.write(l.line, l.stream, l.at),
          a.detach.signal,
        );
        skip = Math.max(skip, seen);
      } catch {
        // The engine is away: asked again below.
      }
      if (a.detach.signal.aborted) return this.detached(a);
      let st: OneOffState | null;
      try {
        st = await this.place.state(id, a.row.id);
      } catch {
        await sleep(backoff, a.detach.signal).catch(() => {});
        backoff = Math.min(backoff * 2, 15_000);
        continue;
      }
      if (!st || !st.running) return this.finish(a, st);
      await sleep(1000, a.detach.signal).catch(() => {});
    }
  }

  private async detached(a: Active): Promise<Run> {
    if (a.timer) clearTimeout(a.timer);
    await a.log.flush();
    this.active.delete(a.row.id);
    return toRun(a.row);
  }

  private armTimeout(a: Active): void {
    const started = Date.parse(a.row.started_at ?? nowIso(this.env.now()));
    const left = started + a.row.timeout_s * 1000 - this.env.now();
    const fire = () =>
      this.stopRun(a, { status: 'timed_out', reason: `ran longer than its timeout of ${a.row.timeout_s} s` });
    if (left <= 0) return fire();
    // Beyond setTimeout's range (about 24 days) it is armed again on the way.
    a.timer = setTimeout(
      () => (left > 2 ** 31 - 1 ? this.armTimeout(a) : fire()),
      Math.min(left, 2 ** 31 - 1),
    );
    a.timer.unref();
  }

  private stopRun(a: Active, why: Stopping): void {
    if (a.stopping) return;
    a.stopping = why;
    if (a.timer) clearTimeout(a.timer);
    if (a.wake) {
      this.waiting.splice(this.waiting.indexOf(a), 1);
      a.wake();
      return;
    }
    if (a.engineId)
      void this.place
        .stop(a.engineId, STOP_GRACE_S)
        .catch((e) => this.env.log.warn({ run: a.row.id, err: String(e) }, 'could not stop a run'));
  }

  /** Records how it ended, removes its one-off, tells the `jobs` topic (and notifications). */
  private async finish(a: Active, st: OneOffState | null): Promise<Run> {
    if (a.timer) clearTimeout(a.timer);
    const { status, reason } = outcome(a.stopping, st, a.engineId !== null);
    const exit = st?.exitCode ?? null;
    a.log.write(`${status}${reason ? `: ${reason}` : ''}`, 'system');
    await a.log.flush();
    const done = await updateRun(this.env.db, a.row.id, ['queued', 'running'], {
      status,
      reason: reason ? a.log.mask(reason).slice(0, 1000) : null,
      exit_code: exit,
      finished_at: nowIso(this.env.now()),
    });
    if (a.engineId)
      await this.place
        .remove(a.engineId)
        .catch((e) =>
          this.env.log.warn({ run: a.row.id, err: String(e) }, 'could not remove a finished run'),
        );
    this.active.delete(a.row.id);
    const run = toRun(done ?? (await getRunRow(this.env.db, a.row.id)) ?? a.row);
    if (done) {
      this.publish(run, a.ctx);
      await pruneRuns(this.env.db, { appId: run.app_id, jobId: run.job_id }).catch(() => 0);
    }
    return run;
  }

  /** The run's state on `jobs` and run:<id>; a job's failure is also `job_failed` (notifications). */
  publish(run: Run, ctx: RunContext | null): void {
    const who = {
      app_id: run.app_id,
      app: ctx?.app.name ?? '',
      job_id: run.job_id,
      job: ctx?.job?.name ?? null,
    };
    this.env.bus.publish('jobs', { type: 'run', ...who, run });
    this.env.bus.publish(runTopic(run.id), { type: 'run', run });
    if (run.job_id && (run.status === 'failed' || run.status === 'timed_out' || run.status === 'interrupted'))
      this.env.bus.publish('jobs', {
        type: 'job_failed',
        ...who,
        run_id: run.id,
        trigger: run.trigger,
        status: run.status,
        exit_code: run.exit_code,
        error: run.reason,
        at: run.finished_at,
      });
  }

  /**
   * At boot: runs a stopped control plane left behind are followed to their end (or recorded
   * `interrupted` when nothing of them is left), and one-offs of finished runs are removed.
   */
  async recover(contexts: (row: JobRunTable) => Promise<RunContext>): Promise<void> {
    const rows = (await activeRuns(this.env.db, null)).filter((r) => !this.active.has(r.id));
    for (const row of rows)
      await this.recoverOne(row, await contexts(row)).catch((e) =>
        this.env.log.warn({ run: row.id, err: String(e) }, 'could not recover a run'),
      );
    // The engine is asked for leftovers when a run was on it, or once this process used it for runs:
    // a control plane whose apps run no job never loads the engine's client for this at boot.
    if (this.sweeping || rows.some((r) => r.container_id ?? r.service_id)) await this.sweep();
  }

  private sweeping: Promise<void> | null = null;

  /** Sweeps leftovers once, before this process first makes a one-off. */
  ensureSwept(): Promise<void> {
    return (this.sweeping ??= this.sweep().catch((e) => {
      this.sweeping = null;
      this.env.log.warn({ err: String(e) }, 'could not look for one-offs left behind');
    }));
  }

  /** Removes one-offs no run in flight holds: made by a process that died before recording them. */
  private async sweep(): Promise<void> {
    for (const o of await this.place.list()) {
      if (this.active.has(o.runId) || this.reserved.has(o.runId)) continue;
      const row = await getRunRow(this.env.db, o.runId);
      if (row && (row.status === 'queued' || row.status === 'running')) continue;
      await this.place.remove(o.id).catch(() => {});
    }
  }

  private async recoverOne(row: JobRunTable, ctx: RunContext): Promise<void> {
    const id = row.container_id ?? row.service_id;
    const st = id ? await this.place.state(id, row.id) : null;
    if (!id || !st) {
      const reason = id
        ? 'its container was gone when the control plane started again'
        : 'the control plane stopped before it started';
      const done = await updateRun(this.env.db, row.id, ['queued', 'running'], {
        status: 'interrupted',
        reason,
        finished_at: nowIso(this.env.now()),
      });
      if (done) this.publish(toRun(done), ctx);
      return;
    }
    const counts = await logCounts(this.env.db, row.id);
    const a = await this.track(row, ctx, counts.seq);
    a.log.write('the control plane started again: following this run to its end', 'system');
    if (st.running) this.armTimeout(a);
    a.done = this.follow(a, counts.output);
  }

  /** Graceful stop: stop following and timing; the one-offs run on, found again at the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const a of this.waiting.splice(0)) a.wake?.();
    for (const a of this.active.values()) {
      if (a.timer) clearTimeout(a.timer);
      a.detach.abort();
    }
    await Promise.race([
      Promise.all([...this.active.values()].map((a) => a.done.catch(() => null))),
      new Promise((r) => setTimeout(r, 10_000).unref()),
    ]);
  }
}

/** The environment of a swarm service's spec (`KEY=value`). */
function swarmEnv(spec: { TaskTemplate?: unknown }): string[] {
  const cs = (spec.TaskTemplate as { ContainerSpec?: { Env?: string[] } } | undefined)?.ContainerSpec;
  return cs?.Env ?? [];
}

/** How a run ended, from why it was stopped (if it was) and what the engine says. */
export function outcome(
  stopping: Stopping | null,
  st: OneOffState | null,
  launched: boolean,
): { status: RunStatus; reason: string | null } {
  if (stopping) return stopping;
  if (!launched) return { status: 'failed', reason: st?.error ?? 'it could not start' };
  if (!st) return { status: 'interrupted', reason: 'its container disappeared before it ended' };
  if (st.error) return { status: 'failed', reason: st.error };
  if (st.exitCode === 0) return { status: 'succeeded', reason: null };
  if (st.exitCode === null) return { status: 'failed', reason: 'it ended without an exit code' };
  return {
    status: 'failed',
    reason: `exited with code ${st.exitCode}${st.oomKilled ? ' (killed: out of memory)' : ''}`,
  };
}
