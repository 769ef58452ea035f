// Where a one-off runs, behind one interface: a container on this host, or a job service on a
// swarm (the swarm picks a node that can run the service, and runs it once).
import type { Engine, OutputLine } from '../docker/index.js';
import {
  createOneOff,
  followRunOutput,
  listRunContainers,
  removeRunContainer,
  runContainerName,
  runContainerState,
  startContainer,
  stopRunContainer,
} from '../docker/index.js';
import {
  createRunService,
  followRunServiceOutput,
  listRunServices,
  oneOffServiceSpec,
  removeRunService,
  runServiceState,
} from '../cluster/oneoff.js';
import { sleep } from '../util/sleep.js';
import type { Target } from './target.js';

export interface OneOffState {
  running: boolean;
  /** Null while it runs, or when it never ran (`error` says why). */
  exitCode: number | null;
  oomKilled?: boolean;
  error?: string | null;
}

export interface Place {
  readonly kind: 'host' | 'swarm';
  /**
   * Makes the run's one-off; answers its engine id. On one host it is created, not started (a
   * scheduled run's is made ahead of its due time); a swarm's job service starts at once.
   */
  create(target: Target, run: { id: string; command: string[] }): Promise<string>;
  /** Starts what create made (a swarm's job service is started already). */
  start(id: string): Promise<void>;
  state(id: string, runId: string): Promise<OneOffState | null>;
  /** Output from the beginning minus `skip` lines, until it ends (or `signal`); answers lines seen. */
  follow(
    id: string,
    runId: string,
    skip: number,
    onLine: (l: OutputLine) => void,
    signal: AbortSignal,
  ): Promise<number>;
  /** Stops it (its grace period), keeping what it wrote. */
  stop(id: string, graceSeconds: number): Promise<void>;
  remove(id: string): Promise<void>;
  /** Every one-off of this instance on the engine, with its run's id. */
  list(): Promise<Array<{ id: string; runId: string }>>;
}

export function hostPlace(engine: Engine): Place {
  return {
    kind: 'host',
    async create(target, run) {
      if (target.kind !== 'host') throw new Error('a swarm target on a single host');
      const c = await createOneOff(engine, target.template, {
        id: run.id,
        name: runContainerName(target.template.app, run.id),
        command: run.command,
      });
      return c.id;
    },
    start: (id) => startContainer(engine, id),
    async state(id, runId) {
      const s = await runContainerState(engine, id, runId);
      return s && { running: s.running, exitCode: s.exitCode, oomKilled: s.oomKilled };
    },
    follow: (id, _runId, skip, onLine, signal) => followRunOutput(engine, id, skip, onLine, signal),
    stop: (id, grace) => stopRunContainer(engine, id, grace),
    remove: (id) => removeRunContainer(engine, id),
    list: async () => (await listRunContainers(engine)).map((c) => ({ id: c.id, runId: c.runId })),
  };
}

export function swarmPlace(engine: Engine): Place {
  const place: Place = {
    kind: 'swarm',
    start: async () => {},
    async create(target, run) {
      if (target.kind !== 'swarm') throw new Error('a host target on a swarm');
      const spec = oneOffServiceSpec(engine, target.spec, {
        id: run.id,
        app: target.app,
        service: target.service,
        deploymentId: target.deploymentId,
        command: run.command,
      });
      return createRunService(engine, spec);
    },
    async state(id, runId) {
      const s = await runServiceState(engine, id, runId);
      return s && { running: s.running, exitCode: s.exitCode, error: s.error };
    },
    async follow(id, runId, skip, onLine, signal) {
      // A service's log stream outlives its task: it is closed once the task has ended.
      const ended = new AbortController();
      const stop = () => ended.abort();
      signal.addEventListener('abort', stop, { once: true });
      const watch = (async () => {
        while (!ended.signal.aborted) {
          const s = await runServiceState(engine, id, runId).catch(() => undefined);
          if (s === null || (s && !s.running)) {
            // The manager gathers the last lines from the node a moment later.
            await sleep(1500, ended.signal).catch(() => {});
            return stop();
          }
          await sleep(1000, ended.signal).catch(() => {});
        }
      })();
      try {
        return await followRunServiceOutput(engine, id, skip, onLine, ended.signal);
      } finally {
        stop();
        signal.removeEventListener('abort', stop);
        await watch;
      }
    },
    stop: (id) => removeRunService(engine, id),
    remove: (id) => removeRunService(engine, id),
    list: async () => (await listRunServices(engine)).map((s) => ({ id: s.id, runId: s.runId })),
  };
  return place;
}
