// What the swarm actually runs, read from the manager: tasks per service, and the wait for an
// update to finish. The update call only records a wish; the tasks and UpdateStatus say what
// happened, so success is read from them and never assumed.
import { guard, StackError, type Engine } from '../docker/engine.js';
import { LABEL_DEPLOYMENT } from '../docker/names.js';
import { sleep } from '../util/sleep.js';

export interface SwarmTask {
  ID: string;
  NodeID?: string;
  DesiredState?: string;
  Version?: { Index: number };
  Spec?: { ContainerSpec?: { Image?: string; Labels?: Record<string, string> } };
  Status?: { State?: string; Err?: string; Message?: string; ContainerStatus?: { ContainerID?: string } };
  CreatedAt?: string;
}

export async function serviceTasks(engine: Engine, serviceName: string): Promise<SwarmTask[]> {
  return guard(
    engine,
    async () => (await engine.docker.listTasks({ filters: { service: [serviceName] } })) as SwarmTask[],
  );
}

/** Swarm node id -> hostname, and the ids of the nodes that are down. */
export async function nodeNames(engine: Engine): Promise<{ names: Map<string, string>; down: Set<string> }> {
  const nodes = (await guard(engine, () => engine.docker.listNodes())) as Array<{
    ID: string;
    Description?: { Hostname?: string };
    Status?: { State?: string };
  }>;
  return {
    names: new Map(nodes.map((n) => [n.ID, n.Description?.Hostname ?? n.ID.slice(0, 12)])),
    down: new Set(nodes.filter((n) => n.Status?.State === 'down').map((n) => n.ID)),
  };
}

const FAILED = new Set(['failed', 'rejected', 'orphaned']);

/**
 * Why the swarm gave up on the new version: the failed task's own error (it is recorded a moment
 * after the rollback starts, so it is waited for briefly), else what the tasks went through.
 */
async function failureReason(engine: Engine, opts: WaitOptions, message?: string): Promise<string> {
  const until = Date.now() + 8_000;
  let mine: SwarmTask[] = [];
  for (;;) {
    mine = (await serviceTasks(engine, opts.serviceName)).filter(
      (t) => t.Spec?.ContainerSpec?.Labels?.[LABEL_DEPLOYMENT] === opts.deploymentId,
    );
    const errs = [...new Set(mine.filter((t) => t.Status?.Err).map(taskProblem))];
    if (errs.length) return errs.slice(0, 3).join('; ');
    if (Date.now() > until) break;
    await sleep(500);
  }
  const neverHealthy = mine.length && !mine.some((t) => t.Status?.State === 'running');
  return [neverHealthy ? 'no new task passed its health check' : null, message ?? 'no task error reported']
    .filter(Boolean)
    .join('; ');
}

function taskProblem(t: SwarmTask): string {
  const s = t.Status ?? {};
  return [s.State, s.Err || s.Message].filter(Boolean).join(': ');
}

export interface WaitOptions {
  serviceName: string;
  deploymentId: string;
  replicas: number;
  /** The spec version the update created (tasks of older specs are the old version). */
  timeoutMs: number;
  /** A task that stays pending for this long with a scheduler error fails the deploy. */
  pendingGraceMs?: number;
  /** Failed tasks of the new version tolerated on a first deploy (nothing to roll back to). */
  maxFailures?: number;
  signal?: AbortSignal;
  log: (line: string) => void;
  /** Whether the swarm rolls back on its own (an update; a create has nothing to go back to). */
  updating: boolean;
}

/**
 * Resolves when every replica of the new version runs (healthy: a task with a health check is
 * `starting` until it passes). Throws a StackError naming the tasks' own errors when the swarm
 * rolled back or paused, a task cannot be scheduled, the new version keeps failing, or time is up.
 */
export async function waitForRollout(engine: Engine, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  const pendingGrace = opts.pendingGraceMs ?? 10_000;
  const pendingSince = new Map<string, number>();
  let lastState = '';
  let lastReport = '';
  for (;;) {
    opts.signal?.throwIfAborted();
    const info = await guard(engine, () => engine.docker.getService(opts.serviceName).inspect());
    const update = (info.UpdateStatus ?? null) as { State?: string; Message?: string } | null;
    const tasks = await serviceTasks(engine, opts.serviceName);
    const mine = tasks.filter((t) => t.Spec?.ContainerSpec?.Labels?.[LABEL_DEPLOYMENT] === opts.deploymentId);
    const failures = mine.filter((t) => FAILED.has(t.Status?.State ?? ''));
    const reasons = () => {
      const seen = [
        ...new Set(
          [...failures, ...mine]
            .filter((t) => t.Status?.Err || FAILED.has(t.Status?.State ?? ''))
            .map(taskProblem),
        ),
      ];
      return seen.slice(0, 3).join('; ') || 'no task error reported';
    };
    const state = update?.State ?? '';
    if (state && state !== lastState) {
      opts.log(`swarm update: ${state}${update?.Message ? ` (${update.Message})` : ''}`);
      lastState = state;
    }
    if (['rollback_started', 'rollback_completed', 'rollback_paused', 'paused'].includes(state)) {
      const what = state === 'paused' ? 'paused the update' : 'rolled back to the previous one';
      throw new StackError(
        `the new version failed and the swarm ${what}: ${await failureReason(engine, opts, update?.Message)}`,
      );
    }
    const running = mine.filter((t) => t.DesiredState === 'running' && t.Status?.State === 'running');
    const report = `${running.length} of ${opts.replicas} new replicas running`;
    if (report !== lastReport) {
      opts.log(report);
      lastReport = report;
    }
    const done = !opts.updating || state === 'completed' || state === '';
    if (running.length >= opts.replicas && done) return;
    const now = Date.now();
    for (const t of mine) {
      const st = t.Status?.State;
      if (t.DesiredState === 'running' && st === 'pending' && t.Status?.Err) {
        const since = pendingSince.get(t.ID) ?? now;
        pendingSince.set(t.ID, since);
        if (now - since >= pendingGrace) throw new StackError(`a new task cannot be placed: ${t.Status.Err}`);
      } else pendingSince.delete(t.ID);
    }
    if (!opts.updating && failures.length >= (opts.maxFailures ?? 3))
      throw new StackError(`the new version keeps failing: ${reasons()}`);
    if (now > deadline)
      throw new StackError(
        `the new version was not running within ${Math.round(opts.timeoutMs / 1000)} s (${report}; ${reasons()})`,
      );
    await sleep(500, opts.signal);
  }
}
