// How each metric of a rule is measured now, on the host or on one app. Levels come from the
// samplers' latest readings (nothing here reads the engine); windows from the resource sampler's
// restarts and the request series; certificates and backups from their rows. A measurement is
// null when there is nothing to measure (no sample yet, no certificate, no backup configured):
// a null changes no rule's state.
import { Cron } from 'croner';
import type { Db } from '../db/index.js';
import type { ResourceSampler } from '../resources/sampler.js';
import type { VitalsSampler } from '../series/vitals.js';
import type { RequestSeries } from '../series/requests.js';
import { addStoredRow, newAcc, readRequestRows } from '../series/store.js';
import { quantile } from '../util/histogram.js';
import type { AlertMetric } from './rules.js';
import { backupAges, certificateExpiries } from './sources-store.js';

export interface Measurement {
  value: number;
  /** What it was measured on (a service, a host name, a backup). */
  detail: string | null;
}

export interface MetricInputs {
  db: Db;
  resources: Pick<ResourceSampler, 'latest' | 'restartsSince' | 'fresh'>;
  vitals: Pick<VitalsSampler, 'latest'>;
  series: Pick<RequestSeries, 'flush'>;
  now: number;
}

export interface Target {
  appId: string | null;
  /** The rule's for_s: the window of windowed metrics (at least a minute). */
  windowS: number;
}

type Reader = (inp: MetricInputs, t: Target) => Measurement | null | Promise<Measurement | null>;

const round = (n: number) => Math.round(n * 100) / 100;
const pct = (a: number, b: number) => (b > 0 ? round((a / b) * 100) : null);

/** The service with the highest value among the app's (or every app's) latest samples. */
function worstService(
  inp: MetricInputs,
  appId: string | null,
  pick: (s: ReturnType<MetricInputs['resources']['latest']>[number]) => number,
): Measurement | null {
  const latest = inp.resources.latest(appId ?? undefined);
  if (!latest.length) return null;
  let best = latest[0]!;
  for (const s of latest) if (pick(s) > pick(best)) best = s;
  return { value: round(pick(best)), detail: best.service };
}

function appCpu(inp: MetricInputs, appId: string): Measurement | null {
  const latest = inp.resources.latest(appId);
  if (!latest.length) return null;
  return { value: round(latest.reduce((n, s) => n + s.cpuPercent, 0)), detail: null };
}

function requestWindow(inp: MetricInputs, t: Target) {
  inp.series.flush(true);
  const end = Math.floor(inp.now / 1000) + 1;
  const start = end - Math.max(60, t.windowS);
  const acc = newAcc();
  const rows = readRequestRows(inp.db, {
    res: 10,
    appId: t.appId ?? '',
    service: t.appId === null ? '' : undefined,
    start,
    end,
  });
  for (const r of rows) addStoredRow(acc, r);
  return acc;
}

/** Seconds between two slots of a cron schedule (the next two after now). */
export function scheduleInterval(expr: string, now: number): number | null {
  try {
    const c = new Cron(expr, { timezone: 'UTC', paused: true });
    const [a, b] = c.nextRuns(2, new Date(now));
    return a && b ? (b.getTime() - a.getTime()) / 1000 : null;
  } catch {
    return null;
  }
}

async function backupAge(inp: MetricInputs, t: Target, inSchedules: boolean): Promise<Measurement | null> {
  let worst: Measurement | null = null;
  for (const b of await backupAges(inp.db, t.appId)) {
    const hours = (inp.now - Date.parse(b.last_success)) / 3_600_000;
    const interval = inSchedules ? scheduleInterval(b.schedule, inp.now) : null;
    if (inSchedules && !interval) continue;
    const value = round(inSchedules ? (hours * 3600) / interval! : hours);
    if (!worst || value > worst.value)
      worst = { value, detail: b.id === 'instance' ? 'the instance backup' : `backup ${b.id}` };
  }
  return worst;
}

export const METRIC_READERS: Record<AlertMetric, Reader> = {
  cpu_percent: (inp, t) => {
    if (t.appId !== null) return appCpu(inp, t.appId);
    const v = inp.vitals.latest();
    return v ? { value: v.cpu_percent, detail: null } : null;
  },
  memory_percent: (inp, t) => {
    if (t.appId !== null) return worstService(inp, t.appId, (s) => s.memoryPercent);
    const v = inp.vitals.latest();
    const p = v ? pct(v.mem_used_bytes, v.mem_total_bytes) : null;
    return p === null ? null : { value: p, detail: null };
  },
  disk_percent: (inp) => {
    const v = inp.vitals.latest();
    const p = v ? pct(v.disk_used_bytes, v.disk_total_bytes) : null;
    return p === null ? null : { value: p, detail: null };
  },
  restarts: (inp, t) => {
    if (!inp.resources.fresh()) return null;
    return {
      value: inp.resources.restartsSince(t.appId, inp.now - Math.max(60, t.windowS) * 1000),
      detail: null,
    };
  },
  unhealthy: (inp, t) => {
    if (!inp.resources.fresh()) return null;
    const latest = inp.resources.latest(t.appId ?? undefined);
    const bad = latest.filter((s) => s.unhealthy > 0).map((s) => s.service);
    return { value: latest.reduce((n, s) => n + s.unhealthy, 0), detail: bad.length ? bad.join(', ') : null };
  },
  http_5xx_rate: (inp, t) => {
    const acc = requestWindow(inp, t);
    return {
      value: acc.requests ? round((acc.errors5xx / acc.requests) * 100) : 0,
      detail: `${acc.requests} requests`,
    };
  },
  p95_latency_ms: (inp, t) => {
    const acc = requestWindow(inp, t);
    return { value: acc.requests ? round(quantile(acc.hist, 0.95)) : 0, detail: `${acc.requests} requests` };
  },
  certificate_days_left: async (inp, t) => {
    let worst: Measurement | null = null;
    for (const c of await certificateExpiries(inp.db, t.appId)) {
      const days = round((Date.parse(c.not_after) - inp.now) / 86_400_000);
      if (!worst || days < worst.value) worst = { value: days, detail: c.host };
    }
    return worst;
  },
  backup_age_hours: (inp, t) => backupAge(inp, t, false),
  backup_age_schedules: (inp, t) => backupAge(inp, t, true),
};
