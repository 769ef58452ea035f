// Resource rows: CPU, memory and restarts per (app, service), one row per minute, written
// additively (a sample adds into its minute's sums, so a row is exact however many samples it
// took) in the time-series connection the request metrics and host vitals use. Kept 30 days.
import type BetterSqlite3 from 'better-sqlite3';
import { seriesConnection, type Db } from '../db/index.js';

export const RESOURCE_STEP = 60;
/** How long resource rows are kept, seconds. */
export const RESOURCE_RETENTION = 30 * 86_400;

export interface ResourceSample {
  appId: string;
  service: string;
  /** Epoch milliseconds. */
  at: number;
  /** Percent of one core (200 = two cores busy). */
  cpuPercent: number;
  memoryBytes: number;
  memoryLimitBytes: number;
  /** Restarts seen since the previous sample. */
  restarts: number;
}

/** [t, service, samples, cpu_sum, mem_sum, mem_limit, restarts], as the statement hands them back. */
export type ResourceRow = [
  t: number,
  service: string,
  samples: number,
  cpu: number,
  mem: number,
  limit: number,
  restarts: number,
];

interface Statements {
  raw: BetterSqlite3.Database;
  add: BetterSqlite3.Statement;
  range: BetterSqlite3.Statement;
  rangeService: BetterSqlite3.Statement;
  prune: BetterSqlite3.Statement;
}

const prepared = new WeakMap<object, Statements>();

function statements(db: Db): Statements {
  let s = prepared.get(db);
  if (!s) {
    const raw = seriesConnection(db);
    const cols = 't, service, samples, cpu_sum, mem_sum, mem_limit, restarts';
    s = {
      raw,
      add: raw.prepare(
        `insert into resource_series (res, app_id, service, t, samples, cpu_sum, mem_sum, mem_limit, restarts)
         values (?, ?, ?, ?, 1, ?, ?, ?, ?)
         on conflict (res, app_id, service, t) do update set samples = samples + 1,
           cpu_sum = cpu_sum + excluded.cpu_sum, mem_sum = mem_sum + excluded.mem_sum,
           mem_limit = max(mem_limit, excluded.mem_limit), restarts = restarts + excluded.restarts`,
      ),
      range: raw
        .prepare(
          `select ${cols} from resource_series where res = ? and app_id = ? and t >= ? and t < ? order by t, service`,
        )
        .raw(true),
      rangeService: raw
        .prepare(
          `select ${cols} from resource_series where res = ? and app_id = ? and service = ? and t >= ? and t < ? order by t`,
        )
        .raw(true),
      prune: raw.prepare('delete from resource_series where res = ? and t < ?'),
    };
    prepared.set(db, s);
  }
  return s;
}

/** Adds samples into their minute rows, in one transaction. */
export function addResourceSamples(db: Db, samples: readonly ResourceSample[]): void {
  if (!samples.length) return;
  const s = statements(db);
  s.raw.transaction(() => {
    for (const x of samples) {
      const t = Math.floor(x.at / 1000 / RESOURCE_STEP) * RESOURCE_STEP;
      s.add.run(
        RESOURCE_STEP,
        x.appId,
        x.service,
        t,
        x.cpuPercent,
        x.memoryBytes,
        Math.round(x.memoryLimitBytes),
        x.restarts,
      );
    }
  })();
}

/** The minute rows of an app (one service, or all) with `start <= t < end` (epoch seconds). */
export function readResourceRows(
  db: Db,
  q: { appId: string; service?: string; start: number; end: number },
): ResourceRow[] {
  const s = statements(db);
  return (
    q.service === undefined
      ? s.range.all(RESOURCE_STEP, q.appId, q.start, q.end)
      : s.rangeService.all(RESOURCE_STEP, q.appId, q.service, q.start, q.end)
  ) as ResourceRow[];
}

/** Deletes rows older than 30 days; answers how many. */
export function pruneResources(db: Db, nowMs: number): number {
  return statements(db).prune.run(RESOURCE_STEP, Math.floor(nowMs / 1000) - RESOURCE_RETENTION).changes;
}

/** False while another writer holds a transaction on the connection: try again later. */
export function canWriteResources(db: Db): boolean {
  return !statements(db).raw.inTransaction;
}
