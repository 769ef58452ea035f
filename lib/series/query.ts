// Metric series in the contract's shape: points oldest first, aligned to the step, gaps filled
// with zeros, at most 500 points; each range reads the coarsest rows that still give its step.
import type BetterSqlite3 from 'better-sqlite3';
import { rawConnection, type Db } from '../db/index.js';
import { badRequest } from '../http/errors.js';
import { addEncoded, newHistogram, quantile } from './histogram.js';
import type { Resolution } from './store.js';

export const RANGES = {
  '1h': { seconds: 3_600, step: 10, res: 10 },
  '6h': { seconds: 21_600, step: 60, res: 60 },
  '24h': { seconds: 86_400, step: 300, res: 60 },
  '7d': { seconds: 604_800, step: 3_600, res: 3600 },
  '30d': { seconds: 2_592_000, step: 7_200, res: 3600 },
} as const satisfies Record<string, { seconds: number; step: number; res: Resolution }>;

export type RangeName = keyof typeof RANGES;
export const RANGE_NAMES = Object.keys(RANGES) as RangeName[];

export function parseRange(v: unknown): RangeName {
  if (v === undefined || v === null || v === '') return '1h';
  if (typeof v === 'string' && Object.prototype.hasOwnProperty.call(RANGES, v)) return v as RangeName;
  throw badRequest(`Unknown range: use one of ${RANGE_NAMES.join(', ')}`, [{ field: 'range', message: `one of ${RANGE_NAMES.join(', ')}` }]);
}

export interface RequestPoint {
  t: string;
  requests: number;
  errors_4xx: number;
  errors_5xx: number;
  bytes_out: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
}

export interface VitalsPoint {
  t: string;
  cpu_percent: number;
  mem_used_bytes: number;
  mem_total_bytes: number;
  disk_used_bytes: number;
  disk_total_bytes: number;
  load1: number;
}

export interface RequestSeriesAnswer {
  range: RangeName;
  step_seconds: number;
  points: RequestPoint[];
}

export interface HostSeriesAnswer extends RequestSeriesAnswer {
  vitals: VitalsPoint[];
}

interface Window {
  start: number;
  end: number;
  step: number;
  n: number;
  res: number;
}

function window(range: RangeName, nowMs: number): Window {
  const r = RANGES[range];
  const n = r.seconds / r.step;
  const last = Math.floor(nowMs / 1000 / r.step) * r.step;
  const start = last - (n - 1) * r.step;
  return { start, end: last + r.step, step: r.step, n, res: r.res };
}

const iso = (s: number) => new Date(s * 1000).toISOString();

interface Queries {
  host: BetterSqlite3.Statement;
  app: BetterSqlite3.Statement;
  service: BetterSqlite3.Statement;
  vitals: BetterSqlite3.Statement;
}
const prepared = new WeakMap<object, Queries>();

function queries(db: Db): Queries {
  let q = prepared.get(db);
  if (!q) {
    const raw = rawConnection(db);
    const cols = 't, requests, errors_4xx, errors_5xx, bytes_out, hist';
    q = {
      host: raw.prepare(`select ${cols} from request_series where res = ? and app_id = '' and service = '' and t >= ? and t < ?`),
      // Every service of the app: the host-wide rows ('') never match an app id.
      app: raw.prepare(`select ${cols} from request_series where res = ? and app_id = ? and t >= ? and t < ?`),
      service: raw.prepare(`select ${cols} from request_series where res = ? and app_id = ? and service = ? and t >= ? and t < ?`),
      vitals: raw.prepare('select t, samples, cpu_sum, load1_sum, mem_used_sum, mem_total_sum, disk_used_sum, disk_total_sum from host_vitals where res = ? and t >= ? and t < ?'),
    };
    prepared.set(db, q);
  }
  return q;
}

interface Row {
  t: number;
  requests: number;
  errors_4xx: number;
  errors_5xx: number;
  bytes_out: number;
  hist: Buffer;
}

function requestPoints(rows: Row[], w: Window): RequestPoint[] {
  const req = new Float64Array(w.n);
  const e4 = new Float64Array(w.n);
  const e5 = new Float64Array(w.n);
  const bytes = new Float64Array(w.n);
  const hists: Array<Uint32Array | undefined> = new Array(w.n);
  for (const r of rows) {
    const i = Math.floor((r.t - w.start) / w.step);
    if (i < 0 || i >= w.n) continue;
    req[i]! += r.requests;
    e4[i]! += r.errors_4xx;
    e5[i]! += r.errors_5xx;
    bytes[i]! += r.bytes_out;
    addEncoded((hists[i] ??= newHistogram()), r.hist);
  }
  const points: RequestPoint[] = new Array(w.n);
  for (let i = 0; i < w.n; i++) {
    const h = hists[i];
    points[i] = {
      t: iso(w.start + i * w.step),
      requests: req[i]!,
      errors_4xx: e4[i]!,
      errors_5xx: e5[i]!,
      bytes_out: bytes[i]!,
      p50_ms: h ? quantile(h, 0.5) : 0,
      p95_ms: h ? quantile(h, 0.95) : 0,
      p99_ms: h ? quantile(h, 0.99) : 0,
    };
  }
  return points;
}

/** An app's requests (all its services, or one), or the host-wide ones (`appId` null). */
export function queryRequests(db: Db, opts: { appId: string | null; service?: string; range: RangeName; now: number }): RequestSeriesAnswer {
  const w = window(opts.range, opts.now);
  const q = queries(db);
  const rows = (
    opts.appId === null
      ? q.host.all(w.res, w.start, w.end)
      : opts.service !== undefined
        ? q.service.all(w.res, opts.appId, opts.service, w.start, w.end)
        : q.app.all(w.res, opts.appId, w.start, w.end)
  ) as Row[];
  return { range: opts.range, step_seconds: w.step, points: requestPoints(rows, w) };
}

/** Host-wide requests plus vitals (averages of the samples in each step; zeros where none). */
export function queryHost(db: Db, opts: { range: RangeName; now: number }): HostSeriesAnswer {
  const base = queryRequests(db, { appId: null, range: opts.range, now: opts.now });
  const w = window(opts.range, opts.now);
  const n = w.n;
  const sums = Array.from({ length: 7 }, () => new Float64Array(n));
  const rows = queries(db).vitals.all(w.res, w.start, w.end) as Array<{
    t: number;
    samples: number;
    cpu_sum: number;
    load1_sum: number;
    mem_used_sum: number;
    mem_total_sum: number;
    disk_used_sum: number;
    disk_total_sum: number;
  }>;
  for (const r of rows) {
    const i = Math.floor((r.t - w.start) / w.step);
    if (i < 0 || i >= n) continue;
    sums[0]![i]! += r.samples;
    sums[1]![i]! += r.cpu_sum;
    sums[2]![i]! += r.mem_used_sum;
    sums[3]![i]! += r.mem_total_sum;
    sums[4]![i]! += r.disk_used_sum;
    sums[5]![i]! += r.disk_total_sum;
    sums[6]![i]! += r.load1_sum;
  }
  const vitals: VitalsPoint[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const k = sums[0]![i]!;
    const avg = (j: number) => (k > 0 ? sums[j]![i]! / k : 0);
    vitals[i] = {
      t: iso(w.start + i * w.step),
      cpu_percent: Math.round(avg(1) * 100) / 100,
      mem_used_bytes: Math.round(avg(2)),
      mem_total_bytes: Math.round(avg(3)),
      disk_used_bytes: Math.round(avg(4)),
      disk_total_bytes: Math.round(avg(5)),
      load1: Math.round(avg(6) * 100) / 100,
    };
  }
  return { ...base, vitals };
}
