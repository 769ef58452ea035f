// Request metrics from the proxy's access log: one more consumer of the one tailer. Each request
// is attributed to (app, service) by its host (port stripped; unknown hosts count host-wide
// only) and counted into a 10-second bucket in memory; completed buckets are added to the
// database every few seconds (and on demand before a query, since rows add up exactly).
import type { Db } from '../db/index.js';
import type { Logger } from '../log.js';
import type { AccessEntry } from '../traffic/parse.js';
import { bucketOf } from '../util/histogram.js';
import {
  addRequestBuckets,
  canWrite,
  newAcc,
  pruneSeries,
  type RequestAcc,
  type RequestRowWrite,
} from './store.js';

export interface SeriesKey {
  appId: string;
  service: string;
}

export interface RequestSeriesOptions {
  db: Db;
  log?: Logger;
  now?: () => number;
  /** hostname -> (app, service), from the same plan the proxy serves. */
  attribution: () => Promise<ReadonlyMap<string, SeriesKey>>;
  flushMs?: number;
  /** How often the attribution is reloaded (it is also reloaded on demand). */
  attributionMs?: number;
  /** Retention job period. */
  pruneMs?: number;
  /** Buckets held in memory before an early flush (a replayed log spans many). */
  maxPendingBuckets?: number;
}

const BUCKET_S = 10;
const HOST_CACHE_MAX = 10_000;

interface Bucket {
  t: number;
  host: RequestAcc;
  /** By series index. */
  series: Map<number, RequestAcc>;
}

/** Lower case, no port, no trailing dot: `Shop.Example.COM:8443` -> `shop.example.com`. */
export function hostKey(raw: string): string {
  let h = raw;
  if (h.charCodeAt(0) === 91 /* [ */) {
    const end = h.indexOf(']');
    h = end === -1 ? h : h.slice(1, end);
  } else {
    const colon = h.indexOf(':');
    if (colon !== -1 && h.indexOf(':', colon + 1) === -1) h = h.slice(0, colon);
  }
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h.toLowerCase();
}

function add(acc: RequestAcc, e: AccessEntry, hb: number): void {
  acc.requests++;
  const s = e.status;
  if (s >= 500) acc.errors5xx++;
  else if (s >= 400) acc.errors4xx++;
  acc.bytes += e.bytes;
  acc.hist[hb]!++;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Request metrics from the access log (a tailer consumer); 10 s / 1 min / 1 h rows. */
    series: RequestSeries;
  }
}

export class RequestSeries {
  private readonly opts: RequestSeriesOptions;
  private readonly now: () => number;
  private attribution: ReadonlyMap<string, SeriesKey> = new Map();
  /** Raw Host header value -> series index (-1: host-wide only). */
  private hostCache = new Map<string, number>();
  private keys: SeriesKey[] = [];
  private keyIndex = new Map<string, number>();
  private buckets = new Map<number, Bucket>();
  private last: Bucket | null = null;
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | null = null;
  private loading: Promise<void> | null = null;

  constructor(opts: RequestSeriesOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
  }

  /** The tailer's observer: synchronous and allocation-light, it runs once per log line. */
  readonly observe = (e: AccessEntry): void => {
    let idx = this.hostCache.get(e.host);
    if (idx === undefined) idx = this.resolve(e.host);
    const t = Math.floor(e.at / 10_000) * BUCKET_S;
    let b = this.last;
    if (b === null || b.t !== t) {
      b = this.buckets.get(t) ?? null;
      if (b === null) {
        if (this.buckets.size >= (this.opts.maxPendingBuckets ?? 4096)) this.flush(true);
        b = { t, host: newAcc(), series: new Map() };
        this.buckets.set(t, b);
      }
      this.last = b;
    }
    const hb = bucketOf(e.durationMs);
    add(b.host, e, hb);
    if (idx >= 0) {
      let acc = b.series.get(idx);
      if (acc === undefined) b.series.set(idx, (acc = newAcc()));
      add(acc, e, hb);
    }
  };

  private resolve(rawHost: string): number {
    const key = this.attribution.get(hostKey(rawHost));
    let idx = -1;
    if (key) {
      const k = `${key.appId}\u0000${key.service}`;
      idx = this.keyIndex.get(k) ?? -1;
      if (idx === -1) {
        idx = this.keys.length;
        this.keys.push(key);
        this.keyIndex.set(k, idx);
      }
    }
    // Hosts come from clients: bound the cache so a stream of made-up names cannot grow it.
    if (this.hostCache.size >= HOST_CACHE_MAX) this.hostCache.clear();
    this.hostCache.set(rawHost, idx);
    return idx;
  }

  /** Replaces hostname -> (app, service) with a map already at hand (a fresh proxy plan). */
  setAttribution(map: ReadonlyMap<string, SeriesKey>): void {
    this.attribution = map;
    this.hostCache = new Map();
  }

  /** Reloads hostname -> (app, service) (after a domain or app change, and periodically). */
  refreshAttribution(): Promise<void> {
    this.loading ??= this.opts
      .attribution()
      .then((map) => {
        this.attribution = map;
        this.hostCache = new Map();
      })
      .catch((err) => this.opts.log?.warn({ err: String(err) }, 'request attribution reload failed'))
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  /**
   * Adds buckets to the database: completed ones, or all (`all`: before a query, at stop; a
   * partial bucket is fine because rows add up). Returns the rows written.
   */
  flush(all = false): number {
    if (this.buckets.size === 0) return 0;
    if (!canWrite(this.opts.db)) return 0;
    const nowMs = this.now();
    const open = Math.floor(nowMs / 10_000) * BUCKET_S;
    const items: RequestRowWrite[] = [];
    const done: number[] = [];
    for (const [t, b] of this.buckets) {
      if (!all && t >= open) continue;
      done.push(t);
      items.push({ appId: '', service: '', t, acc: b.host });
      for (const [idx, acc] of b.series) {
        const k = this.keys[idx]!;
        items.push({ appId: k.appId, service: k.service, t, acc });
      }
    }
    for (const t of done) this.buckets.delete(t);
    this.last = null;
    try {
      return addRequestBuckets(this.opts.db, items, nowMs);
    } catch (err) {
      this.opts.log?.error({ err }, 'request metrics flush failed');
      return 0;
    }
  }

  prune(): void {
    try {
      pruneSeries(this.opts.db, this.now());
    } catch (err) {
      this.opts.log?.error({ err }, 'metrics retention failed');
    }
  }

  /** Subscribes to the tailer and starts the flush, attribution and retention timers. */
  start(tailer: { subscribe(fn: (e: AccessEntry) => void): () => void }): void {
    if (this.unsubscribe) return;
    this.unsubscribe = tailer.subscribe(this.observe);
    void this.refreshAttribution();
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      t.unref();
      this.timers.push(t);
    };
    every(this.opts.flushMs ?? 5_000, () => this.flush());
    every(this.opts.attributionMs ?? 30_000, () => void this.refreshAttribution());
    every(this.opts.pruneMs ?? 600_000, () => this.prune());
    this.prune();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.loading;
    this.flush(true);
  }
}
