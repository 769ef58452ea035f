// What the engine says about every app container now: cumulative CPU time, memory and its limit,
// the restart count and health. One list call, then one-shot stats and an inspect per running
// container (a few at a time, each with a deadline), so a wedged engine costs one slow tick.
import type { Engine } from '../docker/engine.js';
import { listAppContainers, type AppContainer } from '../docker/containers.js';

export interface ContainerReading {
  /** The app's name (its containers' label). */
  app: string;
  service: string;
  container: string;
  running: boolean;
  health: AppContainer['health'];
  /** Cumulative CPU time, nanoseconds (null: not running or not reported). */
  cpuNs: number | null;
  memoryBytes: number | null;
  memoryLimitBytes: number | null;
  restartCount: number;
  /** Epoch ms of the reading. */
  at: number;
}

const AT_ONCE = 8;
const DEADLINE_MS = 5_000;

interface OneShot {
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
}

function withDeadline<T>(p: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.catch(() => null),
    new Promise<null>((r) => (timer = setTimeout(() => r(null), DEADLINE_MS))),
  ]).finally(() => clearTimeout(timer));
}

export async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Memory as `docker stats` shows it: the page cache that can be dropped is not the app's. */
export function memoryOf(s: OneShot | null): { used: number | null; limit: number | null } {
  const ms = s?.memory_stats;
  if (typeof ms?.usage !== 'number') return { used: null, limit: null };
  const cache = ms.stats?.inactive_file ?? ms.stats?.total_inactive_file ?? 0;
  return { used: Math.max(0, ms.usage - cache), limit: typeof ms.limit === 'number' ? ms.limit : null };
}

/** Every app container of this instance on the engine (single-host mode). */
export async function readContainers(engine: Engine, now: () => number): Promise<ContainerReading[]> {
  const list = (await listAppContainers(engine, null)).filter(
    (c) => c.state === 'running' || c.state === 'restarting',
  );
  return mapLimit(list, AT_ONCE, async (c) => {
    const h = engine.docker.getContainer(c.id);
    const running = c.state === 'running';
    const [info, stats] = await Promise.all([
      withDeadline(h.inspect()),
      running
        ? withDeadline(h.stats({ stream: false, 'one-shot': true } as never) as unknown as Promise<OneShot>)
        : Promise.resolve(null),
    ]);
    const mem = memoryOf(stats);
    const cpu = stats?.cpu_stats?.cpu_usage?.total_usage;
    return {
      app: c.app,
      service: c.service,
      container: c.id,
      running,
      health: c.health,
      cpuNs: typeof cpu === 'number' ? cpu : null,
      memoryBytes: mem.used,
      memoryLimitBytes: mem.limit,
      restartCount: info?.RestartCount ?? 0,
      at: now(),
    };
  });
}
