// Cluster mode's one-off: a Swarm job service (replicated-job, one completion, no restart) made
// from the spec of the service it runs for, minus the traffic (no aliases, no published port, no
// health check) and with the run's command. The swarm places its one task on a node that can run
// the service (the same placement constraints), and runs it once.
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { guard, isNotFound, statusOf, type Engine } from '../docker/engine.js';
import {
  LABEL_APP,
  LABEL_DEPLOYMENT,
  LABEL_RUN,
  LABEL_SERVICE,
  runServiceName,
  swarmServiceName,
} from '../docker/names.js';
import { isOwned, ownedFilter, ownerLabels } from '../docker/owner.js';
import { readTimestampedLines, type OutputLine } from '../docker/log-lines.js';
import { isOurService } from './spec.js';
import { serviceTasks, type SwarmTask } from './tasks.js';
import type { ClusterSettings } from './settings.js';

type Spec = Docker.CreateServiceOptions;

/** The live spec of an app's service (its current deployment's), or null when it has none. */
export async function liveServiceSpec(
  engine: Engine,
  app: string,
  service: string,
): Promise<{ spec: Spec; deploymentId: string } | null> {
  try {
    const s = (await guard(engine, () =>
      engine.docker.getService(swarmServiceName(app, service)).inspect(),
    )) as { ID: string; Spec: Spec & { Labels?: Record<string, string> } };
    if (!isOurService(engine, s, app, service)) return null;
    return { spec: s.Spec, deploymentId: s.Spec.Labels?.[LABEL_DEPLOYMENT] ?? '' };
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

/** Where a service's tasks may run: its placement constraints, and the node its volumes are on. */
export function serviceConstraints(cs: ClusterSettings | undefined): string[] {
  return [...(cs?.placement?.constraints ?? []), ...(cs?.pinned_node ? [`node.id==${cs.pinned_node}`] : [])];
}

/** The job service of one run, from the spec of the service it runs for. */
export function oneOffServiceSpec(
  engine: Engine,
  base: Spec,
  run: { id: string; app: string; service: string; deploymentId: string; command: string[] },
): Spec {
  const tt = (base.TaskTemplate ?? {}) as Docker.TaskSpec & { ContainerSpec?: Docker.ContainerSpec };
  const cs = { ...(tt.ContainerSpec ?? {}) } as Docker.ContainerSpec & Record<string, unknown>;
  // The engine reads these keys without regard to case: none of the service's may stay.
  for (const k of ['Args', 'Healthcheck', 'HealthCheck']) delete cs[k];
  const labels = {
    ...ownerLabels(engine),
    [LABEL_APP]: run.app,
    [LABEL_SERVICE]: run.service,
    [LABEL_DEPLOYMENT]: run.deploymentId,
    [LABEL_RUN]: run.id,
  };
  return {
    Name: runServiceName(run.id),
    Labels: labels,
    TaskTemplate: {
      ...tt,
      ContainerSpec: {
        ...cs,
        // Exec form: exactly this argv.
        Command: run.command,
        HealthCheck: { Test: ['NONE'] },
        Labels: { ...((cs.Labels as Record<string, string>) ?? {}), [LABEL_RUN]: run.id },
        TTY: false,
        OpenStdin: false,
      },
      RestartPolicy: { Condition: 'none', MaxAttempts: 0 },
      Networks: ((tt as { Networks?: Array<{ Target: string }> }).Networks ?? []).map((n) => ({
        Target: n.Target,
        Aliases: [],
      })),
    },
    Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
    EndpointSpec: { Mode: 'dnsrr' },
  } as unknown as Spec;
}

export async function createRunService(engine: Engine, spec: Spec): Promise<string> {
  const r = (await guard(engine, () => engine.docker.createService({}, spec))) as {
    id?: string;
    ID?: string;
  };
  return r.id ?? r.ID ?? '';
}

export interface RunServiceState {
  running: boolean;
  exitCode: number | null;
  startedAt: string | null;
  /** Why the swarm could not run it (no node fits, image not pulled...). */
  error: string | null;
}

const ENDED = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);

/** The run's job service as the swarm knows it; null when it is gone or not this run's. */
export async function runServiceState(
  engine: Engine,
  id: string,
  runId: string,
): Promise<RunServiceState | null> {
  let s: { ID: string; Spec?: { Name?: string; Labels?: Record<string, string> } };
  try {
    s = await guard(engine, () => engine.docker.getService(id).inspect());
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
  if (
    !isOwned(engine, 'container', `swarm-service:${s.ID}`, s.Spec?.Labels) ||
    s.Spec?.Labels?.[LABEL_RUN] !== runId
  )
    return null;
  const tasks = (await serviceTasks(engine, s.Spec!.Name!)) as Array<
    SwarmTask & { Status?: { ContainerStatus?: { ExitCode?: number }; Timestamp?: string } }
  >;
  const task = tasks.sort((a, b) => (a.CreatedAt ?? '').localeCompare(b.CreatedAt ?? '')).at(-1);
  const state = task?.Status?.State ?? 'new';
  if (!ENDED.has(state))
    return {
      running: true,
      exitCode: null,
      startedAt: state === 'running' ? (task?.Status?.Timestamp ?? null) : null,
      error: null,
    };
  const code = task?.Status?.ContainerStatus?.ExitCode;
  const neverRan = state === 'rejected' || (code === undefined && state !== 'complete');
  return {
    running: false,
    exitCode: neverRan ? null : (code ?? (state === 'complete' ? 0 : null)),
    startedAt: null,
    error: neverRan ? (task?.Status?.Err ?? `the task ended ${state}`) : null,
  };
}

/** Every run's job service this instance made, with its run's id. */
export async function listRunServices(
  engine: Engine,
): Promise<Array<{ id: string; runId: string; app: string }>> {
  const list = (await guard(engine, () =>
    engine.docker.listServices({ filters: ownedFilter(engine, [LABEL_RUN]) }),
  )) as Array<{ ID: string; Spec?: { Labels?: Record<string, string> } }>;
  return list
    .filter(
      (s) =>
        isOwned(engine, 'container', `swarm-service:${s.ID}`, s.Spec?.Labels) &&
        !!s.Spec?.Labels?.[LABEL_RUN],
    )
    .map((s) => ({ id: s.ID, runId: s.Spec!.Labels![LABEL_RUN]!, app: s.Spec!.Labels![LABEL_APP] ?? '' }));
}

/** Removing a job service stops its task (the swarm gives it its grace period). */
export async function removeRunService(engine: Engine, id: string): Promise<void> {
  await guard(engine, async () => {
    try {
      await engine.docker.getService(id).remove();
    } catch (e) {
      if (!isNotFound(e) && statusOf(e) !== 409) throw e;
    }
  });
}

/**
 * Follows a job service's output (gathered by the manager from the node that ran it), leaving out
 * the first `skip` lines. A service's log stream does not end with its task: the caller aborts
 * `signal` once the task has ended. Answers how many lines it saw.
 */
export async function followRunServiceOutput(
  engine: Engine,
  id: string,
  skip: number,
  onLine: (l: OutputLine) => void,
  signal: AbortSignal,
): Promise<number> {
  const raw = (await guard(
    engine,
    () =>
      engine.docker.getService(id).logs({
        follow: true,
        stdout: true,
        stderr: true,
        timestamps: true,
      } as never) as unknown as Promise<unknown>,
  )) as Readable;
  return readTimestampedLines(
    (r, o, e) => engine.docker.modem.demuxStream(r, o, e),
    raw,
    skip,
    onLine,
    signal,
  );
}
