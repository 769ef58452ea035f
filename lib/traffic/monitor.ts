import { BlockList, isIP } from 'node:net';
import type { AccessEntry } from './parse.js';

export const ANOMALY_KINDS = ['request_spike', 'error_surge'] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];

export interface Anomaly {
  at: string;
  ip: string;
  kind: AnomalyKind;
  count: number;
  window_seconds: number;
  detail: string;
  /** False for allowlisted addresses: recorded, never sent to notification channels. */
  notified: boolean;
}

export interface TopTalker {
  ip: string;
  requests: number;
  errors: number;
  last_seen: string;
}

export interface RecentRequest {
  at: string;
  ip: string;
  host: string;
  method: string;
  path: string;
  status: number;
}

/** Body of GET /api/security/traffic. */
export interface TrafficSnapshot {
  enabled: boolean;
  window_seconds: number;
  request_threshold: number;
  error_threshold: number;
  tracked_ips: number;
  top_talkers: TopTalker[];
  recent_requests: RecentRequest[];
  recent_anomalies: Anomaly[];
}

export interface MonitorStats {
  tracked_ips: number;
  requests_observed: number;
  anomalies: Record<AnomalyKind, number>;
}

export interface MonitorOptions {
  windowSeconds?: number;
  requestThreshold?: number;
  errorThreshold?: number;
  cooldownSeconds?: number;
  maxIps?: number;
  /** IPs and CIDRs whose breaches are recorded but not notified. */
  allowlist?: readonly string[];
  now?: () => number;
  /** Called for every notified breach (never for allowlisted addresses). */
  onAnomaly?: (anomaly: Anomaly) => void;
}

export const MONITOR_DEFAULTS = {
  windowSeconds: 60,
  requestThreshold: 300,
  errorThreshold: 100,
  cooldownSeconds: 600,
  maxIps: 1024,
} as const;

export const RECENT_REQUESTS = 100;
export const RECENT_ANOMALIES = 50;
export const TOP_TALKERS = 20;
/** Sub-buckets per window: per-second for windows up to two minutes, coarser beyond. */
const MAX_BUCKETS = 120;

/** Parses allowlist entries (`10.0.0.1`, `10.0.0.0/8`, `2001:db8::/32`); throws naming a bad one. */
export function parseAllowlist(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const raw of entries) {
    const item = raw.trim();
    if (item === '') continue;
    const slash = item.indexOf('/');
    const addr = slash === -1 ? item : item.slice(0, slash);
    const family = isIP(addr);
    if (family === 0) throw new Error(`allowlist entry "${item}" is not an IP address or CIDR`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash === -1) {
      list.addAddress(addr, type);
      continue;
    }
    const bitsText = item.slice(slash + 1);
    const bits = /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
    if (!(bits >= 0 && bits <= (family === 4 ? 32 : 128))) {
      throw new Error(`allowlist entry "${item}" has an invalid prefix length`);
    }
    list.addSubnet(addr, bits, type);
  }
  return list;
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer, got ${v}`);
  return v;
}

/** Per-address counters: a ring of sub-buckets whose sums slide with time. */
interface IpState {
  ip: string;
  req: Uint32Array;
  err: Uint32Array;
  /** Absolute index of the newest bucket. */
  head: number;
  reqSum: number;
  errSum: number;
  lastSeen: number;
  lastSpike: number;
  lastSurge: number;
  /** Recency list: `older` towards the least recently seen. */
  older: IpState | null;
  newer: IpState | null;
}

const mod = (a: number, n: number): number => ((a % n) + n) % n;

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** The traffic anomaly monitor; null when SVC_SECURITY_MONITOR=false. */
    monitor: TrafficMonitor | null;
  }
}

/**
 * Per-IP sliding-window counters fed by the access-log tailer. Everything is bounded: the
 * address table (least recently seen evicted in O(1) through an intrusive recency list), the per-address
 * ring of sub-buckets, the recent-request and anomaly rings. Time comes from the log entries,
 * so a replayed or delayed log counts the way the traffic actually arrived.
 */
export class TrafficMonitor {
  readonly windowSeconds: number;
  readonly requestThreshold: number;
  readonly errorThreshold: number;
  readonly cooldownSeconds: number;
  readonly maxIps: number;
  private readonly buckets: number;
  private readonly bucketMs: number;
  private readonly cooldownMs: number;
  private readonly allow: BlockList;
  private readonly now: () => number;
  private readonly onAnomaly: ((a: Anomaly) => void) | undefined;
  private readonly table = new Map<string, IpState>();
  /** Least and most recently seen: eviction and touch are pointer moves, no Map reordering. */
  private oldest: IpState | null = null;
  private newest: IpState | null = null;
  private readonly recent: (AccessEntry | undefined)[] = new Array(RECENT_REQUESTS);
  private recentNext = 0;
  private readonly anomalies: (Anomaly | undefined)[] = new Array(RECENT_ANOMALIES);
  private anomalyNext = 0;
  private observed = 0;
  private readonly tripped: Record<AnomalyKind, number> = { request_spike: 0, error_surge: 0 };

  constructor(options: MonitorOptions = {}) {
    this.windowSeconds = positiveInt(
      'windowSeconds',
      options.windowSeconds ?? MONITOR_DEFAULTS.windowSeconds,
    );
    this.requestThreshold = positiveInt(
      'requestThreshold',
      options.requestThreshold ?? MONITOR_DEFAULTS.requestThreshold,
    );
    this.errorThreshold = positiveInt(
      'errorThreshold',
      options.errorThreshold ?? MONITOR_DEFAULTS.errorThreshold,
    );
    this.cooldownSeconds = positiveInt(
      'cooldownSeconds',
      options.cooldownSeconds ?? MONITOR_DEFAULTS.cooldownSeconds,
    );
    this.maxIps = positiveInt('maxIps', options.maxIps ?? MONITOR_DEFAULTS.maxIps);
    const width = Math.ceil(this.windowSeconds / MAX_BUCKETS);
    this.bucketMs = width * 1000;
    this.buckets = Math.ceil(this.windowSeconds / width);
    this.cooldownMs = this.cooldownSeconds * 1000;
    this.allow = parseAllowlist(options.allowlist ?? []);
    this.now = options.now ?? Date.now;
    this.onAnomaly = options.onAnomaly;
  }

  /** The observer to hand to `AccessLogTailer.subscribe`. */
  readonly observe = (e: AccessEntry): void => {
    this.observed++;
    this.recent[this.recentNext] = e;
    this.recentNext = (this.recentNext + 1) % RECENT_REQUESTS;

    const ip = e.ip;
    let st = this.table.get(ip);
    if (st === undefined) {
      st = this.acquire(ip);
      this.table.set(ip, st);
      this.append(st);
    } else if (st !== this.newest) {
      this.unlink(st);
      this.append(st);
    }

    const b = Math.floor(e.at / this.bucketMs);
    const n = this.buckets;
    if (b > st.head) {
      const gap = b - st.head;
      if (gap >= n) {
        st.req.fill(0);
        st.err.fill(0);
        st.reqSum = 0;
        st.errSum = 0;
      } else {
        for (let k = 1; k <= gap; k++) {
          const slot = mod(st.head + k, n);
          st.reqSum -= st.req[slot];
          st.errSum -= st.err[slot];
          st.req[slot] = 0;
          st.err[slot] = 0;
        }
      }
      st.head = b;
    } else if (b <= st.head - n) {
      return; // older than the window: nothing to count
    }
    const slot = mod(b, n);
    st.req[slot]++;
    st.reqSum++;
    if (e.at > st.lastSeen) st.lastSeen = e.at;
    if (e.status >= 400) {
      st.err[slot]++;
      st.errSum++;
      if (st.errSum >= this.errorThreshold && e.at - st.lastSurge >= this.cooldownMs) {
        st.lastSurge = e.at;
        this.trip(st.ip, 'error_surge', st.errSum, e.at);
      }
    }
    if (st.reqSum >= this.requestThreshold && e.at - st.lastSpike >= this.cooldownMs) {
      st.lastSpike = e.at;
      this.trip(st.ip, 'request_spike', st.reqSum, e.at);
    }
  };

  snapshot(): TrafficSnapshot {
    const nowB = Math.floor(this.now() / this.bucketMs);
    const talkers: TopTalker[] = [];
    for (const st of this.table.values()) {
      const requests = this.windowSum(st.req, st.reqSum, st.head, nowB);
      if (requests === 0) continue;
      talkers.push({
        ip: st.ip,
        requests,
        errors: this.windowSum(st.err, st.errSum, st.head, nowB),
        last_seen: new Date(st.lastSeen).toISOString(),
      });
    }
    talkers.sort((a, b) => b.requests - a.requests || b.errors - a.errors || (a.ip < b.ip ? -1 : 1));
    const recent: RecentRequest[] = [];
    for (let i = 1; i <= RECENT_REQUESTS; i++) {
      const e = this.recent[mod(this.recentNext - i, RECENT_REQUESTS)];
      if (e === undefined) break;
      recent.push({
        at: new Date(e.at).toISOString(),
        ip: e.ip,
        host: e.host,
        method: e.method,
        path: e.path,
        status: e.status,
      });
    }
    return {
      enabled: true,
      window_seconds: this.windowSeconds,
      request_threshold: this.requestThreshold,
      error_threshold: this.errorThreshold,
      tracked_ips: this.table.size,
      top_talkers: talkers.slice(0, TOP_TALKERS),
      recent_requests: recent,
      recent_anomalies: this.recentAnomalies(),
    };
  }

  recentAnomalies(): Anomaly[] {
    const out: Anomaly[] = [];
    for (let i = 1; i <= RECENT_ANOMALIES; i++) {
      const a = this.anomalies[mod(this.anomalyNext - i, RECENT_ANOMALIES)];
      if (a === undefined) break;
      out.push({ ...a });
    }
    return out;
  }

  stats(): MonitorStats {
    return { tracked_ips: this.table.size, requests_observed: this.observed, anomalies: { ...this.tripped } };
  }

  private unlink(st: IpState): void {
    if (st.older) st.older.newer = st.newer;
    else this.oldest = st.newer;
    if (st.newer) st.newer.older = st.older;
    else this.newest = st.older;
    st.older = st.newer = null;
  }

  private append(st: IpState): void {
    st.older = this.newest;
    st.newer = null;
    if (this.newest) this.newest.newer = st;
    else this.oldest = st;
    this.newest = st;
  }

  private acquire(ip: string): IpState {
    const victim = this.oldest;
    if (this.table.size >= this.maxIps && victim !== null) {
      this.table.delete(victim.ip);
      this.unlink(victim);
      // Recycle the evicted entry's arrays: memory stays flat whatever the address churn.
      // head = -Infinity makes the first observation clear them.
      victim.ip = ip;
      victim.head = -Infinity;
      victim.reqSum = 0;
      victim.errSum = 0;
      victim.lastSeen = 0;
      victim.lastSpike = -Infinity;
      victim.lastSurge = -Infinity;
      return victim;
    }
    return {
      ip,
      req: new Uint32Array(this.buckets),
      err: new Uint32Array(this.buckets),
      head: -Infinity,
      reqSum: 0,
      errSum: 0,
      lastSeen: 0,
      lastSpike: -Infinity,
      lastSurge: -Infinity,
      older: null,
      newer: null,
    };
  }

  /** Count over the window ending at bucket `nowB`, from a ring whose newest bucket is `head`. */
  private windowSum(ring: Uint32Array, sum: number, head: number, nowB: number): number {
    const n = this.buckets;
    if (nowB <= head) return sum;
    if (nowB - head >= n) return 0;
    let s = sum;
    for (let k = head - n + 1; k <= nowB - n; k++) s -= ring[mod(k, n)];
    return s;
  }

  private trip(ip: string, kind: AnomalyKind, count: number, at: number): void {
    const allowlisted = this.allow.check(ip, ip.includes(':') ? 'ipv6' : 'ipv4');
    const what = kind === 'request_spike' ? 'requests' : 'error responses (4xx/5xx)';
    const limit = kind === 'request_spike' ? this.requestThreshold : this.errorThreshold;
    const a: Anomaly = {
      at: new Date(at).toISOString(),
      ip,
      kind,
      count,
      window_seconds: this.windowSeconds,
      detail:
        `${count} ${what} from ${ip} within ${this.windowSeconds}s (threshold ${limit})` +
        (allowlisted ? '; address is allowlisted, not notified' : ''),
      notified: !allowlisted,
    };
    this.tripped[kind]++;
    this.anomalies[this.anomalyNext] = a;
    this.anomalyNext = (this.anomalyNext + 1) % RECENT_ANOMALIES;
    if (!allowlisted && this.onAnomaly) {
      try {
        this.onAnomaly({ ...a });
      } catch {
        // Notification trouble must not stop counting.
      }
    }
  }
}

/** Body of GET /api/security/traffic when the monitor is turned off. */
export function disabledTrafficSnapshot(options: MonitorOptions = {}): TrafficSnapshot {
  return {
    enabled: false,
    window_seconds: options.windowSeconds ?? MONITOR_DEFAULTS.windowSeconds,
    request_threshold: options.requestThreshold ?? MONITOR_DEFAULTS.requestThreshold,
    error_threshold: options.errorThreshold ?? MONITOR_DEFAULTS.errorThreshold,
    tracked_ips: 0,
    top_talkers: [],
    recent_requests: [],
    recent_anomalies: [],
  };
}
