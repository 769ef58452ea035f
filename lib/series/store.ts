// Time-series rows: requests per (app, service) and host-wide, host vitals. Each observation is
// added into its 10 s, 1 min and 1 h rows at once (the roll-up happens at write time and is exact:
// counts and histogram buckets add). Retention is a delete by age per resolution, which bounds
// the row count whatever the traffic: 8,640 + 10,080 + 2,160 rows per series at most.
import type BetterSqlite3 from 'better-sqlite3';
import { rawConnection, type Db } from '../db/index.js';
import { addEncoded, encode, newHistogram } from './histogram.js';

export const RESOLUTIONS = [10, 60, 3600] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
/** How long rows of each resolution are kept, seconds. */
export const RETENTION: Record<Resolution, number> = { 10: 86_400, 60: 7 * 86_400, 3600: 90 * 86_400 };
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

interface Statements {
  raw: BetterSqlite3.Database;
  getReq: BetterSqlite3.Statement;
  putReq: BetterSqlite3.Statement;
  addVitals: BetterSqlite3.Statement;
  pruneReq: BetterSqlite3.Statement;
  pruneVitals: BetterSqlite3.Statement;
}

const prepared = new WeakMap<object, Statements>();

function statements(db: Db): Statements {
  let s = prepared.get(db);
  if (!s) {
    const raw = rawConnection(db);
    s = {
      raw,
      getReq: raw.prepare('select requests, errors_4xx, errors_5xx, bytes_out, hist from request_series where res = ? and app_id = ? and service = ? and t = ?'),
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
      const old = s.getReq.get(r.res, r.appId, r.service, r.t) as
        | { requests: number; errors_4xx: number; errors_5xx: number; bytes_out: number; hist: Buffer }
        | undefined;
      const a = r.acc;
      if (old) {
        a.requests += old.requests;
        a.errors4xx += old.errors_4xx;
        a.errors5xx += old.errors_5xx;
        a.bytes += old.bytes_out;
        addEncoded(a.hist, old.hist);
      }
      s.putReq.run(r.res, r.appId, r.service, r.t, a.requests, a.errors4xx, a.errors5xx, a.bytes, encode(a.hist));
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
      s.addVitals.run(res, Math.floor(at / res) * res, v.cpu_percent, v.load1, Math.round(v.mem_used_bytes), Math.round(v.mem_total_bytes), Math.round(v.disk_used_bytes), Math.round(v.disk_total_bytes));
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
