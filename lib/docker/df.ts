// The engine's disk usage (`GET /system/df`). The engine runs one such walk at a time and answers
// any other with a 500 "a disk usage operation is already running", so concurrent callers of this
// process share one walk, and a walk someone else started (the docker CLI, another tool) is waited
// out with a short backoff instead of failing the request.
import { guard, type Engine } from './engine.js';

const BUSY = /disk usage operation is already running/i;
const RETRY_MS = [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000];

const inFlight = new WeakMap<Engine, Promise<unknown>>();

export interface DfOptions {
  /** Waits between attempts while another client's walk runs (tests shorten them). */
  retryMs?: readonly number[];
}

export function engineDf<T = unknown>(engine: Engine, opts: DfOptions = {}): Promise<T> {
  const running = inFlight.get(engine);
  if (running) return running as Promise<T>;
  const walk = dfWithRetry(engine, opts.retryMs ?? RETRY_MS).finally(() => inFlight.delete(engine));
  inFlight.set(engine, walk);
  return walk as Promise<T>;
}

async function dfWithRetry(engine: Engine, waits: readonly number[]): Promise<unknown> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await engine.docker.df();
    } catch (e) {
      const busy = BUSY.test(String((e as { message?: unknown })?.message ?? ''));
      if (!busy || attempt >= waits.length) return guard(engine, () => Promise.reject(e));
      await new Promise((r) => setTimeout(r, waits[attempt]));
    }
  }
}
