// Resource history: every SVC_RESOURCE_INTERVAL seconds (10 by default, at most 15) the engine is
// read once for every app container (readings.ts; in cluster mode every task, through the stats
// agent of ./agent.ts), and each (app, service) gets a sample: CPU as the share of one core used
// since the previous reading, memory and its limit, restarts since then. Samples go to the
// one-minute rows of the series store and stay here (the latest per service, restarts of the last
// day) for the alert rules, which must not read the engine again.
import type { Db } from '../db/index.js';
import type { Logger } from '../log.js';
import {
  addResourceSamples,
  canWriteResources,
  pruneResources,
  type ResourceSample,
} from '../series/resource-store.js';
import type { ContainerReading } from './readings.js';
import { appIdsByName } from './store.js';

export interface ServiceResources {
  appId: string;
  service: string;
  at: number;
  cpuPercent: number;
  memoryBytes: number;
  memoryLimitBytes: number;
  /** The highest share of its own limit any container of the service uses. */
  memoryPercent: number;
  /** Containers (or missing tasks) that are unhealthy or restarting. */
  unhealthy: number;
  /** Containers (tasks) whose CPU or memory this sample has. */
  measured: number;
}

export interface ResourceSamplerDeps {
  db: Db;
  log?: Logger;
  now: () => number;
  intervalMs: number;
  /** The host's memory: the limit of a container that has none. */
  hostMemory: () => number;
  /** Reads the engine (single host or the cluster's agent). */
  read: () => Promise<ContainerReading[]>;
  /** Ends what reading needs (the cluster agent's log stream). */
  close?: () => void;
}

interface Previous {
  cpuNs: number | null;
  at: number;
  restartCount: number;
}

const RESTART_MEMORY_MS = 86_400_000;
const MAX_RESTARTS_KEPT = 10_000;
const PRUNE_EVERY_MS = 3_600_000;

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** CPU, memory and restarts of every app service, sampled for the history and the alert rules. */
    resources: ResourceSampler;
  }
}

export class ResourceSampler {
  private readonly prev = new Map<string, Previous>();
  private current: ServiceResources[] = [];
  private lastAt = 0;
  /** App id -> times of restarts seen (oldest first). */
  private readonly restarts = new Map<string, number[]>();
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;
  private lastPrune = 0;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly deps: ResourceSamplerDeps) {}

  /** A reading of the engine is recent (within three intervals). */
  fresh(): boolean {
    return this.lastAt > 0 && this.deps.now() - this.lastAt <= 3 * this.deps.intervalMs;
  }

  /** The latest sample of every service (of one app), when it is recent (three intervals). */
  latest(appId?: string): ServiceResources[] {
    if (!this.fresh()) return [];
    return appId === undefined ? this.current : this.current.filter((s) => s.appId === appId);
  }

  /** Restarts of an app's containers (of every app: null) at or after `sinceMs`. */
  restartsSince(appId: string | null, sinceMs: number): number {
    let n = 0;
    for (const [id, times] of this.restarts) {
      if (appId !== null && id !== appId) continue;
      for (let i = times.length - 1; i >= 0 && times[i]! >= sinceMs; i--) n++;
    }
    return n;
  }

  onSample(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** One reading of the engine, recorded. Concurrent calls share it. */
  sample(): Promise<void> {
    this.sampling ??= this.sampleOnce()
      .catch((err) => this.deps.log?.warn({ err: String(err) }, 'resource sample failed'))
      .finally(() => (this.sampling = null));
    return this.sampling;
  }

  private async sampleOnce(): Promise<void> {
    const [readings, ids] = await Promise.all([this.deps.read(), appIdsByName(this.deps.db)]);
    const samples = this.fold(readings, ids);
    if (samples.length && canWriteResources(this.deps.db)) addResourceSamples(this.deps.db, samples);
    const now = this.deps.now();
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      pruneResources(this.deps.db, now);
    }
    for (const fn of this.listeners) {
      try {
        fn();
      } catch {
        /* a listener's fault is its own */
      }
    }
  }

  /** Readings -> one sample per (app, service); remembers what the next reading is compared with. */
  private fold(readings: ContainerReading[], ids: Map<string, string>): ResourceSample[] {
    const now = this.deps.now();
    const by = new Map<string, Folding>();
    const seen = new Set<string>();
    for (const r of readings) {
      const appId = ids.get(r.app);
      if (!appId) continue;
      seen.add(r.container);
      const key = `${appId}\u0000${r.service}`;
      let s = by.get(key);
      if (!s) by.set(key, (s = { ...emptyService(appId, r.service, now), restarts: 0 }));
      this.addReading(s, r, now);
    }
    for (const id of this.prev.keys()) if (!seen.has(id)) this.prev.delete(id);
    this.pruneRestarts(now);
    const all = [...by.values()];
    this.current = all.map(({ restarts: _r, ...s }) => ({
      ...s,
      cpuPercent: round(s.cpuPercent),
      memoryPercent: round(s.memoryPercent),
    }));
    this.lastAt = now;
    return all
      .filter((s) => s.measured > 0 || s.restarts > 0)
      .map((s) => ({
        appId: s.appId,
        service: s.service,
        at: now,
        cpuPercent: round(s.cpuPercent),
        memoryBytes: s.memoryBytes,
        memoryLimitBytes: s.memoryLimitBytes,
        restarts: s.restarts,
      }));
  }

  /** One container's reading into its service's sample, against its previous reading. */
  private addReading(s: Folding, r: ContainerReading, now: number): void {
    const host = this.deps.hostMemory();
    const p = this.prev.get(r.container);
    if (r.cpuNs !== null && p?.cpuNs != null && r.at > p.at && r.cpuNs >= p.cpuNs)
      s.cpuPercent += ((r.cpuNs - p.cpuNs) / ((r.at - p.at) * 1e6)) * 100;
    const limit = Math.min(r.memoryLimitBytes ?? host, host || Infinity);
    if (r.memoryBytes !== null) {
      s.memoryBytes += r.memoryBytes;
      s.memoryLimitBytes += limit;
      if (limit > 0) s.memoryPercent = Math.max(s.memoryPercent, (r.memoryBytes / limit) * 100);
    }
    if (r.cpuNs !== null || r.memoryBytes !== null) s.measured++;
    if (r.health === 'unhealthy' || !r.running) s.unhealthy++;
    const restarted = p ? Math.max(0, r.restartCount - p.restartCount) : 0;
    if (restarted) this.noteRestarts(s.appId, now, restarted);
    s.restarts += restarted;
    this.prev.set(r.container, { cpuNs: r.cpuNs, at: r.at, restartCount: r.restartCount });
  }

  private noteRestarts(appId: string, at: number, n: number): void {
    let times = this.restarts.get(appId);
    if (!times) this.restarts.set(appId, (times = []));
    for (let i = 0; i < n; i++) times.push(at);
    if (times.length > MAX_RESTARTS_KEPT) times.splice(0, times.length - MAX_RESTARTS_KEPT);
  }

  private pruneRestarts(now: number): void {
    for (const [id, times] of this.restarts) {
      let drop = 0;
      while (drop < times.length && times[drop]! < now - RESTART_MEMORY_MS) drop++;
      if (drop) times.splice(0, drop);
      if (!times.length) this.restarts.delete(id);
    }
  }

  start(): void {
    if (this.timer) return;
    void this.sample();
    this.timer = setInterval(() => void this.sample(), this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sampling;
    this.deps.close?.();
  }
}

const round = (n: number) => Math.round(n * 100) / 100;

/** A service's sample while readings are added into it. */
type Folding = ServiceResources & { restarts: number };

const emptyService = (appId: string, service: string, at: number): ServiceResources => ({
  appId,
  service,
  at,
  cpuPercent: 0,
  memoryBytes: 0,
  memoryLimitBytes: 0,
  memoryPercent: 0,
  unhealthy: 0,
  measured: 0,
});
