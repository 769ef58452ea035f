// Host vitals sampled every 10 s from /proc and statfs, kept like the request series. The same
// sampler answers the `host` topic and /metrics (its latest sample), so the host is read once.
import { readFile, statfs } from 'node:fs/promises';
import { loadavg } from 'node:os';
import type { Db } from '../db/index.js';
import type { Logger } from '../log.js';
// Retention of these rows is the request series' job (pruneSeries covers both tables).
import { addVitalsSample, canWrite, type VitalsSample } from './store.js';

export type { VitalsSample } from './store.js';

interface CpuTimes {
  busy: number;
  total: number;
}

/** Aggregate CPU line of /proc/stat: busy is everything but idle and iowait. */
export function parseProcStat(text: string): CpuTimes | null {
  const line = text.split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/);
  if (f[0] !== 'cpu') return null;
  const n = f.slice(1, 9).map(Number);
  if (n.length < 4 || n.some((x) => !Number.isFinite(x))) return null;
  const total = n.reduce((a, b) => a + b, 0);
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  return { busy: total - idle, total };
}

/** MemTotal and MemAvailable of /proc/meminfo, in bytes. */
export function parseMeminfo(text: string): { total: number; available: number } | null {
  const get = (k: string) => {
    const m = new RegExp(`^${k}:\\s+(\\d+) kB$`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : null;
  };
  const total = get('MemTotal');
  const available = get('MemAvailable') ?? get('MemFree');
  return total === null || available === null ? null : { total, available };
}

export interface VitalsSamplerOptions {
  db: Db;
  /** Its file system is the one whose disk use is reported. */
  dataDir: string;
  log?: Logger;
  now?: () => number;
  intervalMs?: number;
  /** Recording into the database (off: the sampler only serves `latest`). */
  record?: boolean;
  procRoot?: string;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Host vitals every 10 s; its latest sample serves the `host` topic and /metrics too. */
    vitals: VitalsSampler;
  }
}

export class VitalsSampler {
  private readonly opts: VitalsSamplerOptions;
  private readonly now: () => number;
  private prevCpu: CpuTimes | null = null;
  private last: VitalsSample | null = null;
  private timers: NodeJS.Timeout[] = [];
  private listeners = new Set<(s: VitalsSample) => void>();
  private sampling: Promise<VitalsSample | null> | null = null;

  constructor(opts: VitalsSamplerOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
  }

  latest(): VitalsSample | null {
    return this.last;
  }

  onSample(fn: (s: VitalsSample) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Reads the host now. CPU is the share busy since the previous sample (0 for the first one). */
  async read(): Promise<VitalsSample> {
    const proc = this.opts.procRoot ?? '/proc';
    const [stat, mem, fs] = await Promise.all([
      readFile(`${proc}/stat`, 'utf8').then(parseProcStat, () => null),
      readFile(`${proc}/meminfo`, 'utf8').then(parseMeminfo, () => null),
      statfs(this.opts.dataDir).catch(() => null),
    ]);
    let cpu = 0;
    if (stat && this.prevCpu && stat.total > this.prevCpu.total) {
      cpu = ((stat.busy - this.prevCpu.busy) / (stat.total - this.prevCpu.total)) * 100;
    }
    if (stat) this.prevCpu = stat;
    return {
      at: this.now(),
      cpu_percent: Math.round(Math.min(100, Math.max(0, cpu)) * 100) / 100,
      mem_used_bytes: mem ? mem.total - mem.available : 0,
      mem_total_bytes: mem?.total ?? 0,
      disk_used_bytes: fs ? (fs.blocks - fs.bfree) * fs.bsize : 0,
      disk_total_bytes: fs ? fs.blocks * fs.bsize : 0,
      load1: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    };
  }

  /** One sample: read, remember, record, tell listeners. */
  sample(): Promise<VitalsSample | null> {
    this.sampling ??= this.read()
      .then((s) => {
        this.last = s;
        if (this.opts.record !== false && canWrite(this.opts.db)) addVitalsSample(this.opts.db, s);
        for (const fn of this.listeners) {
          try {
            fn(s);
          } catch {
            /* a listener's fault is its own */
          }
        }
        return s;
      })
      .catch((err) => {
        this.opts.log?.warn({ err: String(err) }, 'host vitals sample failed');
        return null;
      })
      .finally(() => {
        this.sampling = null;
      });
    return this.sampling;
  }

  start(): void {
    if (this.timers.length) return;
    void this.sample();
    const tick = setInterval(() => void this.sample(), this.opts.intervalMs ?? 10_000);
    tick.unref();
    this.timers.push(tick);
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.sampling;
  }
}
