// Metric series in the contract's shape: points oldest first, aligned to the step, gaps filled
// with zeros (host vitals: only the steps that have a sample), at most 500 points; each range
// reads rows of its own step (one row per point and series; see the design note in store.ts).
import type { Db } from '../db/index.js';
import { badRequest } from '../http/errors.js';
import { quantile } from '../util/histogram.js';
import {
  addStoredRow,
  newAcc,
  readRequestRows,
  vitalsQuery,
  type RequestAcc,
  type Resolution,
} from './store.js';

export const RANGES = {
  '1h': { seconds: 3_600, step: 10, res: 10 },
  '6h': { seconds: 21_600, step: 60, res: 60 },
  '24h': { seconds: 86_400, step: 300, res: 300 },
  '7d': { seconds: 604_800, step: 3_600, res: 3600 },
  '30d': { seconds: 2_592_000, step: 7_200, res: 7200 },
} as const satisfies Record<string, { seconds: number; step: number; res: Resolution }>;

export type RangeName = keyof typeof RANGES;
export const RANGE_NAMES = Object.keys(RANGES) as RangeName[];

export function parseRange(v: unknown): RangeName {
  if (v === undefined || v === null || v === '') return '1h';
  if (typeof v === 'string' && Object.prototype.hasOwnProperty.call(RANGES, v)) return v as RangeName;
  throw badRequest(`Unknown range: use one of ${RANGE_NAMES.join(', ')}`, [
    { field: 'range', message: `one of ${RANGE_NAMES.join(', ')}` },
  ]);
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
  res: Resolution;
}

function window(range: RangeName, nowMs: number): Window {
  const r = RANGES[range];
  const n = r.seconds / r.step;
  const last = Math.floor(nowMs / 1000 / r.step) * r.step;
  const start = last - (n - 1) * r.step;
  return { start, end: last + r.step, step: r.step, n, res: r.res };
}

const iso = (s: number) => new Date(s * 1000).toISOString();

/** An app's requests (all its services, or one), or the host-wide ones (`appId` null). */
export function queryRequests(
  db: Db,
  opts: { appId: string | null; service?: string; range: RangeName; now: number },
): RequestSeriesAnswer {
  const w = window(opts.range, opts.now);
  const rows = readRequestRows(db, {
    res: w.res,
    appId: opts.appId ?? '',
    service: opts.appId === null ? '' : opts.service,
    start: w.start,
    end: w.end,
  });
  // Rows are of the step's own resolution: every row is one point (several when an app has several services).
  const accs: Array<RequestAcc | undefined> = new Array(w.n);
  for (const r of rows) {
    const i = Math.floor((r[0] - w.start) / w.step);
    if (i < 0 || i >= w.n) continue;
    addStoredRow((accs[i] ??= newAcc()), r);
  }
  const points: RequestPoint[] = new Array(w.n);
  for (let i = 0; i < w.n; i++) {
    const a = accs[i];
    points[i] = {
      t: iso(w.start + i * w.step),
      requests: a?.requests ?? 0,
      errors_4xx: a?.errors4xx ?? 0,
      errors_5xx: a?.errors5xx ?? 0,
      bytes_out: a?.bytes ?? 0,
      p50_ms: a ? quantile(a.hist, 0.5) : 0,
      p95_ms: a ? quantile(a.hist, 0.95) : 0,
      p99_ms: a ? quantile(a.hist, 0.99) : 0,
    };
  }
  return { range: opts.range, step_seconds: w.step, points };
}

/**
 * Host-wide requests plus vitals: the average of the samples in each step that has any. A step
 * without a sample (the current one before its first sample, the time the host was down) is
 * absent, never zeros: "0 B of 0 B" would be a reading nobody took.
 */
export function queryHost(db: Db, opts: { range: RangeName; now: number }): HostSeriesAnswer {
  const base = queryRequests(db, { appId: null, range: opts.range, now: opts.now });
  const w = window(opts.range, opts.now);
  const n = w.n;
  const sums = Array.from({ length: 7 }, () => new Float64Array(n));
  const rows = vitalsQuery(db).all(w.res, w.start, w.end) as Array<{
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
  const vitals: VitalsPoint[] = [];
  for (let i = 0; i < n; i++) {
    const k = sums[0]![i]!;
    if (k <= 0) continue;
    const avg = (j: number) => sums[j]![i]! / k;
    vitals.push({
      t: iso(w.start + i * w.step),
      cpu_percent: Math.round(avg(1) * 100) / 100,
      mem_used_bytes: Math.round(avg(2)),
      mem_total_bytes: Math.round(avg(3)),
      disk_used_bytes: Math.round(avg(4)),
      disk_total_bytes: Math.round(avg(5)),
      load1: Math.round(avg(6) * 100) / 100,
    });
  }
  return { ...base, vitals };
}
