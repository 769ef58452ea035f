// An app's resource history in the contract's shape: one item per (service, step) that has a
// sample, oldest first; a step without one is absent, never zeros (a reading nobody took). The
// window is `from`/`to` (or a `range` of the request metrics' ranges); the step is a multiple of
// the one-minute rows, chosen so a service has at most 500 points when the caller names none.
import type { Db } from '../db/index.js';
import { badRequest } from '../http/errors.js';
import { RANGES, RANGE_NAMES, type RangeName } from './query.js';
import { readResourceRows, RESOURCE_RETENTION, RESOURCE_STEP } from './resource-store.js';

export const MAX_POINTS = 500;

export interface ResourcePoint {
  service: string;
  at: string;
  cpu_percent: number;
  memory_bytes: number;
  memory_limit_bytes: number;
  restarts: number;
}

export interface ResourceQuery {
  from?: string;
  to?: string;
  step?: number;
  range?: string;
  service?: string;
}

interface Window {
  start: number;
  end: number;
  step: number;
}

const field = (name: string, message: string) =>
  badRequest(`${name}: ${message}`, [{ field: name, message }]);

function instant(v: string, name: string): number {
  const ms = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(v) || Number.isNaN(ms)) throw field(name, 'an ISO-8601 timestamp');
  return Math.floor(ms / 1000);
}

/** The window and step a query asks for, checked. */
export function resourceWindow(q: ResourceQuery, nowMs: number): Window {
  const now = Math.floor(nowMs / 1000);
  if (q.range !== undefined && !RANGE_NAMES.includes(q.range as RangeName))
    throw field('range', `one of ${RANGE_NAMES.join(', ')}`);
  const span = q.range ? RANGES[q.range as RangeName].seconds : 3600;
  const to = q.to !== undefined ? instant(q.to, 'to') : now;
  const from = q.from !== undefined ? instant(q.from, 'from') : to - span;
  if (from >= to) throw field('from', 'must be before to');
  if (to - from > RESOURCE_RETENTION + 86_400) throw field('from', 'the history is kept 30 days');
  let step = q.step;
  if (step === undefined) {
    step = RESOURCE_STEP;
    while ((to - from) / step > MAX_POINTS) step += RESOURCE_STEP;
  } else if (step < RESOURCE_STEP || step % RESOURCE_STEP !== 0) {
    throw field('step', `a multiple of ${RESOURCE_STEP} seconds`);
  } else if ((to - from) / step > MAX_POINTS) {
    throw field(
      'step',
      `at most ${MAX_POINTS} points per service: use a step of at least ${Math.ceil((to - from) / MAX_POINTS / RESOURCE_STEP) * RESOURCE_STEP} s`,
    );
  }
  // Whole steps: the first one holding `from`, the last one holding `to`.
  const start = Math.floor(from / step) * step;
  const end = Math.ceil(to / step) * step;
  return { start, end, step };
}

interface Acc {
  service: string;
  t: number;
  samples: number;
  cpu: number;
  mem: number;
  limit: number;
  restarts: number;
}

export function queryResources(
  db: Db,
  appId: string,
  q: ResourceQuery,
  nowMs: number,
): { items: ResourcePoint[] } {
  const w = resourceWindow(q, nowMs);
  const rows = readResourceRows(db, { appId, service: q.service, start: w.start, end: w.end });
  const points = new Map<string, Acc>();
  for (const [t, service, samples, cpu, mem, limit, restarts] of rows) {
    const at = Math.floor(t / w.step) * w.step;
    const key = `${at}\u0000${service}`;
    let a = points.get(key);
    if (!a) points.set(key, (a = { service, t: at, samples: 0, cpu: 0, mem: 0, limit: 0, restarts: 0 }));
    a.samples += samples;
    a.cpu += cpu;
    a.mem += mem;
    a.limit = Math.max(a.limit, limit);
    a.restarts += restarts;
  }
  const items = [...points.values()]
    .sort((a, b) => a.t - b.t || (a.service < b.service ? -1 : a.service > b.service ? 1 : 0))
    .map((a) => ({
      service: a.service,
      at: new Date(a.t * 1000).toISOString(),
      cpu_percent: Math.round((a.cpu / a.samples) * 100) / 100,
      memory_bytes: Math.round(a.mem / a.samples),
      memory_limit_bytes: a.limit,
      restarts: a.restarts,
    }));
  return { items };
}
