// Time-series rows: requests per (app, service) and host-wide, host vitals. Each observation is
// added into its row of every resolution at once (the roll-up happens at write time and is exact:
// counts and histogram buckets add). Retention is a delete by age per resolution, which bounds
// the row count whatever the traffic.
//
// Design note (query speed). Each range of the metrics endpoints has a resolution equal to its
// step, so a point is one row and a range reads at most 360 rows of a series: 5 min rows for the
// 24 h range and 2 h rows for the 30 d range are kept besides the 10 s, 1 min and 1 h ones. Most
// of a query's time is better-sqlite3 handing rows to JavaScript, not SQLite finding them, so the
// row count is what matters: reading 1 min rows for 24 h meant 1,440 rows merged five to a point
// (bench:metrics p95 22-131 ms); the extra resolutions cost about 650 rows per series and two
// more upserts per series per flush. A cache of closed buckets was not needed for the goal and
// would have to be invalidated by late log lines, which write into past buckets.
import type BetterSqlite3 from 'better-sqlite3';
import { seriesConnection, type Db } from '../db/index.js';
import { addEncoded, encode, newHistogram } from '../util/histogram.js';

export const RESOLUTIONS = [10, 60, 300, 3600, 7200] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
/** How long rows of each resolution are kept, seconds. */
export const RETENTION: Record<Resolution, number> = {
  10: 86_400,
  60: 7 * 86_400,
  300: 86_400,
  3600: 90 * 86_400,
  7200: 30 * 86_400,
};
/** The most rows one series can hold. */
export const MAX_ROWS_PER_SERIES = RESOLUTIONS.reduce((n, r) => n + RETENTION[r] / r + 1, 0);

export interface RequestAcc {
  requests: number;
  errors4xx: number;
  errors5xx: number;
  bytes: number;
  hist: Uint32Array;
}

export function newAcc(): RequestAcc {
  return { requests: 0, errors4xx: 0, errors5xx: 0, bytes: 0, hist: newHistogram() };
}

export interface RequestRowWrite {
  appId: string;
  service: string;
  /** Start of the 10 s bucket, epoch seconds. */
  t: number;
  acc: RequestAcc;
}

export interface VitalsSample {
  at: number;
  cpu_percent: number;
  mem_used_bytes: number;
  mem_total_bytes: number;
  disk_used_bytes: number;
  disk_total_bytes: number;
  load1: number;
}

/** The columns of a request row, in the order `readRequestRows` hands them back (raw arrays). */
export const REQUEST_COLUMNS = 't, requests, errors_4xx, errors_5xx, bytes_out, hist';
export type StoredRequestRow = [
  t: number,
  requests: number,
  errors4xx: number,
  errors5xx: number,
  bytes: number,
  hist: Buffer,
];

/** Adds a stored row into an accumulator: the one way rows are read, for roll-ups and queries alike. */
export function addStoredRow(into: RequestAcc, row: StoredRequestRow): void {
  into.requests += row[1];
  into.errors4xx += row[2];
  into.errors5xx += row[3];
  into.bytes += row[4];
  addEncoded(into.hist, row[5]);
}

interface Statements {
  raw: BetterSqlite3.Database;
  getReq: BetterSqlite3.Statement;
  rangeReq: BetterSqlite3.Statement;
  nextService: BetterSqlite3.Statement;
  putReq: BetterSqlite3.Statement;
  addVitals: BetterSqlite3.Statement;
  pruneReq: BetterSqlite3.Statement;
  pruneVitals: BetterSqlite3.Statement;
}

const prepared = new WeakMap<object, Statements>();

function statements(db: Db): Statements {
  let s = prepared.get(db);
  if (!s) {
    const raw = seriesConnection(db);
    s = {
      raw,
      getReq: raw
        .prepare(
          `select ${REQUEST_COLUMNS} from request_series where res = ? and app_id = ? and service = ? and t = ?`,
        )
        .raw(true),
      // Arrays rather than objects: building an object per row is most of a range query's time.
      rangeReq: raw
        .prepare(
          `select ${REQUEST_COLUMNS} from request_series where res = ? and app_id = ? and service = ? and t >= ? and t < ?`,
        )
        .raw(true),
      // One primary-key seek per service (a loose index scan): the app's services without reading its rows.
      nextService: raw
        .prepare('select min(service) as s from request_series where res = ? and app_id = ? and service > ?')
        .pluck(true),
      putReq: raw.prepare(
        'insert or replace into request_series (res, app_id, service, t, requests, errors_4xx, errors_5xx, bytes_out, hist) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      addVitals: raw.prepare(
        `insert into host_vitals (res, t, samples, cpu_sum, load1_sum, mem_used_sum, mem_total_sum, disk_used_sum, disk_total_sum)
         values (?, ?, 1, ?, ?, ?, ?, ?, ?)
         on conflict (res, t) do update set samples = samples + 1, cpu_sum = cpu_sum + excluded.cpu_sum,
           load1_sum = load1_sum + excluded.load1_sum, mem_used_sum = mem_used_sum + excluded.mem_used_sum,
           mem_total_sum = mem_total_sum + excluded.mem_total_sum, disk_used_sum = disk_used_sum + excluded.disk_used_sum,
           disk_total_sum = disk_total_sum + excluded.disk_total_sum`,
      ),
      pruneReq: raw.prepare('delete from request_series where res = ? and t < ?'),
      pruneVitals: raw.prepare('delete from host_vitals where res = ? and t < ?'),
    };
    prepared.set(db, s);
  }
  return s;
}

/**
 * The rows of one series (`service` given), or of every service of an app (`service` undefined;
 * the host-wide rows are app '' and service ''), at resolution `res` with `start <= t < end`.
 * Each service is one range of the primary key (res, app_id, service, t).
 */
export function readRequestRows(
  db: Db,
  q: { res: Resolution; appId: string; service?: string; start: number; end: number },
): StoredRequestRow[] {
  const s = statements(db);
  if (q.service !== undefined)
    return s.rangeReq.all(q.res, q.appId, q.service, q.start, q.end) as StoredRequestRow[];
  const out: StoredRequestRow[] = [];
  let service: string | null = s.nextService.get(q.res, q.appId, '') as string | null;
  // The host-wide series has the empty service name, which `> ''` skips: read it first.
  if (q.appId === '')
    for (const r of s.rangeReq.all(q.res, '', '', q.start, q.end) as StoredRequestRow[]) out.push(r);
  while (service !== null) {
    for (const r of s.rangeReq.all(q.res, q.appId, service, q.start, q.end) as StoredRequestRow[])
      out.push(r);
    service = s.nextService.get(q.res, q.appId, service) as string | null;
  }
  return out;
}

/** False while another writer holds a transaction on the connection: try again later. */
export function canWrite(db: Db): boolean {
  return !statements(db).raw.inTransaction;
}

function mergeAcc(into: RequestAcc, from: RequestAcc): void {
  into.requests += from.requests;
  into.errors4xx += from.errors4xx;
  into.errors5xx += from.errors5xx;
  into.bytes += from.bytes;
  for (let i = 0; i < into.hist.length; i++) into.hist[i] = (into.hist[i]! + from.hist[i]!) >>> 0;
}

/**
 * Adds 10 s buckets into their 10 s, 1 min and 1 h rows in one transaction. Buckets of the same
 * row are merged in memory first, so replaying an hour of log costs one write per row.
 */
export function addRequestBuckets(db: Db, items: readonly RequestRowWrite[], nowMs: number): number {
  if (items.length === 0) return 0;
  const s = statements(db);
  const nowS = Math.floor(nowMs / 1000);
  const rows = new Map<string, { res: number; appId: string; service: string; t: number; acc: RequestAcc }>();
  for (const it of items) {
    for (const res of RESOLUTIONS) {
      const t = Math.floor(it.t / res) * res;
      // Older than this resolution keeps: the next prune would only delete it.
      if (t + res <= nowS - RETENTION[res]) continue;
      const key = `${res}\u0000${it.appId}\u0000${it.service}\u0000${t}`;
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { res, appId: it.appId, service: it.service, t, acc: newAcc() }));
      mergeAcc(row.acc, it.acc);
    }
  }
  s.raw.transaction(() => {
    for (const r of rows.values()) {
      const old = s.getReq.get(r.res, r.appId, r.service, r.t) as StoredRequestRow | undefined;
      const a = r.acc;
      if (old) addStoredRow(a, old);
      s.putReq.run(
        r.res,
        r.appId,
        r.service,
        r.t,
        a.requests,
        a.errors4xx,
        a.errors5xx,
        a.bytes,
        encode(a.hist),
      );
    }
  })();
  return rows.size;
}

/** Adds one sample into its 10 s, 1 min and 1 h rows. */
export function addVitalsSample(db: Db, v: VitalsSample): void {
  const s = statements(db);
  const at = Math.floor(v.at / 1000);
  s.raw.transaction(() => {
    for (const res of RESOLUTIONS) {
      s.addVitals.run(
        res,
        Math.floor(at / res) * res,
        v.cpu_percent,
        v.load1,
        Math.round(v.mem_used_bytes),
        Math.round(v.mem_total_bytes),
        Math.round(v.disk_used_bytes),
        Math.round(v.disk_total_bytes),
      );
    }
  })();
}

/** Deletes rows older than their resolution keeps. */
export function pruneSeries(db: Db, nowMs: number): { requests: number; vitals: number } {
  const s = statements(db);
  const nowS = Math.floor(nowMs / 1000);
  let requests = 0;
  let vitals = 0;
  s.raw.transaction(() => {
    for (const res of RESOLUTIONS) {
      const cutoff = nowS - RETENTION[res];
      requests += s.pruneReq.run(res, cutoff).changes;
      vitals += s.pruneVitals.run(res, cutoff).changes;
    }
  })();
  return { requests, vitals };
}

const vitalsQueries = new WeakMap<object, BetterSqlite3.Statement>();

/** The host vitals of one resolution in a time range (res, start, end), as one cached statement. */
export function vitalsQuery(db: Db): BetterSqlite3.Statement {
  let q = vitalsQueries.get(db);
  if (!q) {
    q = seriesConnection(db).prepare(
      'select t, samples, cpu_sum, load1_sum, mem_used_sum, mem_total_sum, disk_used_sum, disk_total_sum from host_vitals where res = ? and t >= ? and t < ?',
    );
    vitalsQueries.set(db, q);
  }
  return q;
}
