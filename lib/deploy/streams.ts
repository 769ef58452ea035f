// Topic sources for the WebSocket: build:<deploymentId> (replayed from the table, then live),
// logs:<appId> (runtime logs of every service, last lines replayed), stats:<appId> and host
// (stats collected only while someone listens; host from the vitals sampler). Log text travels as JSON strings: data, never markup.
import { cpus, loadavg } from 'node:os';
import type { VitalsSample } from '../series/vitals.js';
import type { Readable } from 'node:stream';
import type { Services } from '../http/handler.js';
import type { BusEvent } from '../events/bus.js';
import { getApp } from '../apps/store.js';
import { listAppContainers } from '../docker/containers.js';
import { readLogs } from './store.js';
import { appSwarmServices } from '../cluster/rollout.js';
import { LABEL_SERVICE } from '../docker/names.js';
import { lineSplitter, MAX_LINE, swarmLogLine } from '../docker/log-lines.js';

const LOG_REPLAY = 100;
const RESCAN_MS = 2_000;
const STATS_MS = 2_000;

export function registerStreams(env: Services): { stopAll(): void } {
  const stoppers = new Map<string, () => void>();
  const rings = new Map<string, BusEvent[]>();

  env.bus.source('build', {
    async replay(topic) {
      const id = topic.slice('build:'.length);
      const rows = await readLogs(env.db, id);
      return rows.map((r) => ({
        topic,
        ts: r.at,
        data: { seq: r.seq, at: r.at, stream: r.stream, line: r.line },
      }));
    },
  });

  env.bus.source('logs', {
    replay: (topic) => rings.get(topic)?.slice() ?? [],
    start(topic) {
      const ring: BusEvent[] = [];
      rings.set(topic, ring);
      stoppers.set(
        topic,
        followAppLogs(env, topic, (e) => {
          ring.push(e);
          if (ring.length > LOG_REPLAY) ring.shift();
        }),
      );
    },
    stop(topic) {
      stoppers.get(topic)?.();
      stoppers.delete(topic);
      rings.delete(topic);
    },
  });

  env.bus.source('stats', {
    start(topic) {
      stoppers.set(topic, collectStats(env, topic));
    },
    stop(topic) {
      stoppers.get(topic)?.();
      stoppers.delete(topic);
    },
  });

  env.bus.source('host', {
    start(topic) {
      stoppers.set(topic, collectHost(env, topic));
    },
    stop(topic) {
      stoppers.get(topic)?.();
      stoppers.delete(topic);
    },
  });

  return {
    stopAll() {
      for (const s of stoppers.values()) s();
      stoppers.clear();
    },
  };
}

/** Follows every running container of the app (new ones too, found by a periodic rescan). */
function followAppLogs(env: Services, topic: string, remember: (e: BusEvent) => void): () => void {
  const appId = topic.slice('logs:'.length);
  const followed = new Map<string, Readable>();
  let stopped = false;
  let seq = 0;
  let scanning = false;
  const emit = (service: string, container: string, stream: 'stdout' | 'stderr', line: string) => {
    const data = {
      seq: ++seq,
      at: new Date().toISOString(),
      service,
      container,
      stream,
      line: line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line,
    };
    remember({ topic, ts: data.at, data });
    env.bus.publish(topic, data);
  };
  /** A followed stream, forgotten when it ends so that the next scan follows its source again. */
  const follow = (key: string, raw: Readable) => {
    followed.set(key, raw);
    const forget = () => followed.delete(key);
    raw.on('end', forget);
    raw.on('close', forget);
    raw.on('error', forget);
  };
  const scan = async () => {
    if (scanning || stopped) return;
    scanning = true;
    try {
      const app = await getApp(env.db, appId).catch(() => null);
      if (!app) return;
      if (env.config.cluster.mode === 'swarm') {
        await followSwarmServices(app.name);
        return;
      }
      for (const c of await listAppContainers(env.engine, app.name)) {
        if (c.state !== 'running' || followed.has(c.id) || stopped) continue;
        const container = env.engine.docker.getContainer(c.id);
        const info = await container.inspect();
        const raw = (await container.logs({
          follow: true,
          stdout: true,
          stderr: true,
          tail: LOG_REPLAY,
        })) as unknown as Readable;
        if (stopped) {
          raw.destroy();
          return;
        }
        follow(c.id, raw);
        const lines = (stream: 'stdout' | 'stderr') =>
          lineSplitter((l) => emit(c.service, c.name, stream, l));
        if (info.Config.Tty) raw.pipe(lines('stdout'));
        else env.engine.docker.modem.demuxStream(raw, lines('stdout'), lines('stderr'));
      }
    } catch {
      // Engine hiccup: the next scan retries.
    } finally {
      scanning = false;
    }
  };
  // Cluster mode: the manager gathers a Swarm service's logs from its tasks on every node. With
  // `details` each line starts with the task's attributes, which name the task it came from.
  const started = new Set<string>();
  const followSwarmServices = async (appName: string) => {
    for (const svc of await appSwarmServices(env.engine, appName)) {
      const key = `service:${svc.ID}`;
      if (followed.has(key) || stopped) continue;
      const service = svc.Spec.Labels?.[LABEL_SERVICE] ?? '';
      const again = started.has(key);
      started.add(key);
      const raw = (await env.engine.docker.getService(svc.ID).logs({
        follow: true,
        stdout: true,
        stderr: true,
        details: true,
        // A stream that ended (the service was replaced) resumes from now, without repeating.
        ...(again ? { since: Math.floor(Date.now() / 1000) } : { tail: LOG_REPLAY }),
      } as never)) as unknown as Readable;
      if (stopped) {
        raw.destroy();
        return;
      }
      follow(key, raw);
      const lines = (stream: 'stdout' | 'stderr') =>
        lineSplitter((l) => {
          const { task, line } = swarmLogLine(l);
          emit(service, task, stream, line);
        });
      env.engine.docker.modem.demuxStream(raw, lines('stdout'), lines('stderr'));
    }
  };
  void scan();
  const timer = setInterval(() => void scan(), RESCAN_MS);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
    for (const s of followed.values()) s.destroy();
    followed.clear();
  };
}

export { swarmLogLine };

interface DockerStats {
  cpu_stats?: {
    cpu_usage?: { total_usage?: number; percpu_usage?: number[] };
    system_cpu_usage?: number;
    online_cpus?: number;
  };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
}

export function statsFrom(s: DockerStats) {
  const cpuDelta = (s.cpu_stats?.cpu_usage?.total_usage ?? 0) - (s.precpu_stats?.cpu_usage?.total_usage ?? 0);
  const sysDelta = (s.cpu_stats?.system_cpu_usage ?? 0) - (s.precpu_stats?.system_cpu_usage ?? 0);
  const online = s.cpu_stats?.online_cpus ?? s.cpu_stats?.cpu_usage?.percpu_usage?.length ?? 1;
  const cpu = cpuDelta > 0 && sysDelta > 0 ? (cpuDelta / sysDelta) * online * 100 : 0;
  const ms = s.memory_stats ?? {};
  // Page cache is reclaimable: subtract it, as `docker stats` does.
  const cache = ms.stats?.inactive_file ?? ms.stats?.total_inactive_file ?? ms.stats?.cache ?? 0;
  let rx = 0;
  let tx = 0;
  for (const n of Object.values(s.networks ?? {})) {
    rx += n.rx_bytes ?? 0;
    tx += n.tx_bytes ?? 0;
  }
  return {
    cpu_percent: Math.round(cpu * 100) / 100,
    memory_bytes: Math.max(0, (ms.usage ?? 0) - cache),
    memory_limit_bytes: ms.limit ?? null,
    rx_bytes: rx,
    tx_bytes: tx,
  };
}

function collectStats(env: Services, topic: string): () => void {
  const appId = topic.slice('stats:'.length);
  let busy = false;
  let stopped = false;
  const tick = async () => {
    if (busy || stopped) return;
    busy = true;
    try {
      const app = await getApp(env.db, appId).catch(() => null);
      if (!app) return;
      const running = (await listAppContainers(env.engine, app.name)).filter((c) => c.state === 'running');
      const items = await Promise.all(
        running.map(async (c) => {
          try {
            const s = (await env.engine.docker
              .getContainer(c.id)
              .stats({ stream: false })) as unknown as DockerStats;
            return { service: c.service, container: c.name, ...statsFrom(s) };
          } catch {
            return null;
          }
        }),
      );
      if (!stopped)
        env.bus.publish(topic, { at: new Date().toISOString(), items: items.filter((x) => x !== null) });
    } catch {
      // Engine unavailable: try again next tick.
    } finally {
      busy = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), STATS_MS);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

// The host topic shows the vitals sampler's samples (the same ones stored for /api/host/metrics
// and exposed on /metrics), so the host is read once whoever is looking.
function collectHost(env: Services, topic: string): () => void {
  const publish = (v: VitalsSample) => {
    const [, l5, l15] = loadavg();
    env.bus.publish(topic, {
      at: new Date(v.at).toISOString(),
      cpu_percent: v.cpu_percent,
      cpus: cpus().length,
      memory: { total_bytes: v.mem_total_bytes, used_bytes: v.mem_used_bytes },
      disk:
        v.disk_total_bytes > 0
          ? {
              path: env.config.dataDir,
              total_bytes: v.disk_total_bytes,
              used_bytes: v.disk_used_bytes,
              free_bytes: v.disk_total_bytes - v.disk_used_bytes,
            }
          : null,
      load: [v.load1, l5, l15],
    });
  };
  const off = env.vitals.onSample(publish);
  const last = env.vitals.latest();
  if (last) publish(last);
  else void env.vitals.sample();
  return off;
}
