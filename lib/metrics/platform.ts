// What an operator scrapes a PaaS for: the host, the apps' containers, the deployments and the
// real-time clients. Read at scrape time like every other series (nothing runs between scrapes);
// the engine is asked once per scrape for the app containers and their one-shot stats, with a
// deadline, so a wedged engine leaves those series empty instead of hanging the scrape.
import { loadavg } from 'node:os';
import { deploymentCounts, finishedTimes } from '../deploy/store.js';
import type { Db } from '../db/index.js';
import type { Engine } from '../docker/engine.js';
import { LABEL_APP, LABEL_SERVICE } from '../docker/names.js';
import { isOwned, ownedFilter } from '../docker/owner.js';
import type { VitalsSampler } from '../series/vitals.js';
import { ACTIVE, TERMINAL } from '../apps/deployment.js';
import type { Metrics } from './index.js';
import type { MetricValue } from './custom.js';

/** Upper bounds (seconds) of the deployment duration histogram: a cached rebuild to a slow build. */
export const DEPLOY_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1800];
const ENGINE_DEADLINE_MS = 5_000;
const STATS_AT_ONCE = 8;

interface AppContainer {
  app: string;
  service: string;
  state: string;
  restarts: number;
  cpuSeconds: number | null;
  memoryBytes: number | null;
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.catch(() => null),
    new Promise<null>((r) => (timer = setTimeout(() => r(null), ms))),
  ]).finally(() => clearTimeout(timer));
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Every app container this instance made, with restart count and (running ones) CPU and memory. */
export async function readAppContainers(engine: Engine): Promise<AppContainer[]> {
  const list = (
    await engine.docker.listContainers({ all: true, filters: ownedFilter(engine, [LABEL_APP]) })
  ).filter((c) => isOwned(engine, 'container', c.Id, c.Labels));
  return mapLimit(list, STATS_AT_ONCE, async (c) => {
    const base = {
      app: c.Labels?.[LABEL_APP] ?? '',
      service: c.Labels?.[LABEL_SERVICE] ?? '',
      state: c.State ?? 'unknown',
    };
    const h = engine.docker.getContainer(c.Id);
    const [info, stats] = await Promise.all([
      h.inspect().catch(() => null),
      c.State === 'running'
        ? (h.stats({ stream: false, 'one-shot': true } as never) as unknown as Promise<unknown>).catch(
            () => null,
          )
        : Promise.resolve(null),
    ]);
    const s = stats as {
      cpu_stats?: { cpu_usage?: { total_usage?: number } };
      memory_stats?: { usage?: number; stats?: { inactive_file?: number } };
    } | null;
    const usage = s?.memory_stats?.usage;
    return {
      ...base,
      restarts: info?.RestartCount ?? 0,
      cpuSeconds:
        typeof s?.cpu_stats?.cpu_usage?.total_usage === 'number'
          ? s.cpu_stats.cpu_usage.total_usage / 1e9
          : null,
      // What `docker stats` shows: the page cache that can be dropped is not the app's memory.
      memoryBytes:
        typeof usage === 'number' ? Math.max(0, usage - (s?.memory_stats?.stats?.inactive_file ?? 0)) : null,
    };
  });
}

interface DeployFigures {
  byOutcome: Map<string, number>;
  /** Per-bucket (not cumulative) counts of finished deployments; the last slot is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
  queued: number;
  running: number;
}

export async function readDeployFigures(db: Db): Promise<DeployFigures> {
  const byOutcome = new Map<string, number>(TERMINAL.map((s) => [s, 0]));
  const rows = await deploymentCounts(db);
  let queued = 0;
  let running = 0;
  for (const r of rows) {
    if (byOutcome.has(r.status)) byOutcome.set(r.status, Number(r.n));
    else if (r.status === 'queued') queued = Number(r.n);
    else if ((ACTIVE as readonly string[]).includes(r.status)) running += Number(r.n);
  }
  // Computed here rather than with a date function: SQLite's and PostgreSQL's differ.
  const durations = (await finishedTimes(db, TERMINAL)).map((r) => ({
    seconds: (Date.parse(r.finished_at!) - Date.parse(r.started_at!)) / 1000,
  }));
  const buckets = new Array(DEPLOY_BUCKETS.length + 1).fill(0);
  let sum = 0;
  for (const d of durations) {
    const s = Math.max(0, Number(d.seconds));
    let b = 0;
    while (b < DEPLOY_BUCKETS.length && s > DEPLOY_BUCKETS[b]!) b++;
    buckets[b]++;
    sum += s;
  }
  return { byOutcome, buckets, sum, count: durations.length, queued, running };
}

export interface PlatformDeps {
  db: Db;
  engine: Engine;
  vitals: VitalsSampler;
}

export function registerPlatformMetrics(m: Metrics, deps: PlatformDeps): void {
  // One read of the host and one of the engine per scrape, shared by the series that use them.
  let scrape: {
    at: number;
    host: ReturnType<VitalsSampler['latest']> | Promise<unknown>;
    apps: Promise<AppContainer[] | null>;
    deploys: Promise<DeployFigures>;
  } | null = null;
  const current = () => {
    const now = Date.now();
    if (!scrape || now - scrape.at > 1_000) {
      scrape = {
        at: now,
        host: deps.vitals.latest() ?? deps.vitals.read().catch(() => null),
        apps: withDeadline(readAppContainers(deps.engine), ENGINE_DEADLINE_MS),
        deploys: readDeployFigures(deps.db),
      };
      // Nobody may await a branch of this scrape; its failure must not be unhandled.
      scrape.deploys.catch(() => {});
    }
    return scrape;
  };
  const host = async () => (await current().host) as ReturnType<VitalsSampler['latest']>;
  const hostGauge = (
    name: string,
    help: string,
    pick: (h: NonNullable<Awaited<ReturnType<typeof host>>>) => number,
  ) =>
    m.add({
      name,
      help,
      type: 'gauge',
      values: async () => {
        const h = await host();
        return h ? [{ value: pick(h) }] : [];
      },
    });
  hostGauge(
    'svc_host_cpu_usage_ratio',
    'Share of the host CPU busy over the last sampling interval (0-1)',
    (h) => h.cpu_percent / 100,
  );
  hostGauge(
    'svc_host_memory_used_bytes',
    'Host memory in use (total minus available)',
    (h) => h.mem_used_bytes,
  );
  hostGauge('svc_host_memory_total_bytes', 'Host memory in total', (h) => h.mem_total_bytes);
  hostGauge(
    'svc_host_disk_used_bytes',
    'Used bytes of the file system holding the data directory',
    (h) => h.disk_used_bytes,
  );
  hostGauge(
    'svc_host_disk_total_bytes',
    'Size of the file system holding the data directory',
    (h) => h.disk_total_bytes,
  );
  m.add({
    name: 'svc_host_load',
    help: 'Host load average, by period',
    type: 'gauge',
    values: () => {
      const [l1, l5, l15] = loadavg();
      return [
        { value: l1!, labels: { period: '1m' } },
        { value: l5!, labels: { period: '5m' } },
        { value: l15!, labels: { period: '15m' } },
      ];
    },
  });

  const apps = async () => (await current().apps) ?? [];
  m.add({
    name: 'svc_app_containers',
    help: 'Containers of each app, by state (running, exited, restarting...)',
    type: 'gauge',
    values: async () => {
      const counts = new Map<string, MetricValue>();
      for (const c of await apps()) {
        const key = `${c.app}\0${c.state}`;
        const v = counts.get(key) ?? { value: 0, labels: { app: c.app, state: c.state } };
        v.value++;
        counts.set(key, v);
      }
      return [...counts.values()];
    },
  });
  m.add({
    name: 'svc_app_container_restarts_total',
    help: 'Restarts by the engine of the current containers of each app service',
    type: 'counter',
    values: async () => sumBy(await apps(), (c) => c.restarts),
  });
  m.add({
    name: 'svc_app_cpu_seconds_total',
    help: 'CPU time used by the running containers of each app service',
    type: 'counter',
    values: async () =>
      sumBy(
        (await apps()).filter((c) => c.cpuSeconds !== null),
        (c) => c.cpuSeconds!,
      ),
  });
  m.add({
    name: 'svc_app_memory_bytes',
    help: 'Memory used by the running containers of each app service (page cache excluded)',
    type: 'gauge',
    values: async () =>
      sumBy(
        (await apps()).filter((c) => c.memoryBytes !== null),
        (c) => c.memoryBytes!,
      ),
  });

  const deploys = () => current().deploys;
  m.add({
    name: 'svc_deployments_total',
    help: 'Finished deployments kept in the database, by outcome',
    type: 'counter',
    values: async () =>
      [...(await deploys()).byOutcome].map(([outcome, value]) => ({ value, labels: { outcome } })),
  });
  m.add({
    name: 'svc_deployment_duration_seconds',
    help: 'Duration of finished deployments, from start to finish',
    type: 'histogram',
    values: async () => {
      const d = await deploys();
      const out: MetricValue[] = [];
      let cumulative = 0;
      DEPLOY_BUCKETS.forEach((le, i) => {
        cumulative += d.buckets[i]!;
        out.push({ metricName: 'svc_deployment_duration_seconds_bucket', value: cumulative, labels: { le } });
      });
      out.push({
        metricName: 'svc_deployment_duration_seconds_bucket',
        value: d.count,
        labels: { le: '+Inf' },
      });
      out.push({ metricName: 'svc_deployment_duration_seconds_sum', value: d.sum });
      out.push({ metricName: 'svc_deployment_duration_seconds_count', value: d.count });
      return out;
    },
  });
  m.add({
    name: 'svc_deployment_queue_depth',
    help: 'Deployments waiting for a worker',
    type: 'gauge',
    values: async () => [{ value: (await deploys()).queued }],
  });
  m.add({
    name: 'svc_deployments_running',
    help: 'Deployments between their start and their outcome',
    type: 'gauge',
    values: async () => [{ value: (await deploys()).running }],
  });
}

function sumBy(containers: AppContainer[], pick: (c: AppContainer) => number): MetricValue[] {
  const out = new Map<string, MetricValue>();
  for (const c of containers) {
    const key = `${c.app}\0${c.service}`;
    const v = out.get(key) ?? { value: 0, labels: { app: c.app, service: c.service } };
    v.value += pick(c);
    out.set(key, v);
  }
  return [...out.values()];
}

/** WebSocket clients in total and subscriptions by topic family (`logs:<id>` counts as `logs`). */
export function registerWsMetrics(
  m: Metrics,
  ws: { clientCount(): number; topicCounts(): Map<string, number> },
): void {
  m.add({
    name: 'svc_websocket_clients',
    help: 'Open WebSocket connections',
    type: 'gauge',
    values: () => [{ value: ws.clientCount() }],
  });
  m.add({
    name: 'svc_websocket_subscriptions',
    help: 'WebSocket subscriptions by topic (per-resource topics by their kind)',
    type: 'gauge',
    values: () => [...ws.topicCounts()].map(([topic, value]) => ({ value, labels: { topic } })),
  });
}
