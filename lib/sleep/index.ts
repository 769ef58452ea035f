// Sleeping apps: an app with `sleep_after_minutes` stops its containers after that long without a
// request through the proxy, and the next request to any of its hosts wakes it.
//
// - Idle: the last request per app comes from Caddy's access log (one more consumer of the one
//   tailer), attributed by host from the same plan Caddy serves, like the request metrics. A
//   status change (a deploy, a start, a wake, a setting changed) counts as activity too, and so does
//   this process's start: the last-request times are kept in memory only, so a restart never puts
//   an app to sleep before it has been watched for its whole idle time.
// - Sleep: the row is marked first and the app's hosts go to the wake path before any container
//   stops, so no request ever sees a stopped app. On one host the resolver stops answering for the
//   app, and Caddy's lookups fall back to the wake path once it has picked that up (no config
//   load); in cluster mode the wake route is loaded, and if Caddy cannot take it, nothing stops.
// - Wake: the containers start the way POST .../start starts them, each passes the wake gate (its
//   healthcheck, its health_path, else its port accepting connections), and the routes follow
//   them (lib/proxy/deploy.ts `followRunning`, which also clears the mark).
//   Concurrent requests share one wake; sleeping and waking of one app never overlap.
import { connect } from 'node:net';
import type { Services } from '../http/handler.js';
import type { AccessEntry } from '../traffic/parse.js';
import type { AccessLogTailer } from '../traffic/tailer.js';
import { hostKey } from '../series/requests.js';
import { recordAudit } from '../audit/index.js';
import {
  guard,
  listAppContainers,
  stackStart,
  stackStop,
  waitForCondition,
  type Engine,
} from '../docker/index.js';
import { healthGate, defaultProbeMode } from '../deploy/health.js';
import { statsFrom } from '../deploy/streams.js';
import { followRunning } from '../proxy/deploy.js';
import { removeUpstreams } from '../proxy/upstreams-store.js';
import { sleep as pause } from '../util/sleep.js';
import { previewScope, publishAppEvent } from '../apps/events.js';
import { refreshAppStatus } from '../apps/status.js';
import {
  appUpdatedAt,
  getApp,
  isSleeping,
  serviceSettings,
  setSleeping,
  sleepCandidates,
} from '../apps/store.js';
import type { App } from '../apps/model.js';

export interface SleeperOptions {
  /** How often idle apps are looked for (default 30 s). */
  intervalMs?: number;
  /** The idle check's clock (tests drive it; the stop and start stay real). */
  now?: () => number;
}

/** The route that owns the setting: background sleeping and waking are audited under it. */
const SETTING_ROUTE = 'PATCH /api/apps/{id}';
const AWAKE_STATUSES = new Set(['running', 'degraded']);

export class WakeError extends Error {}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Sleeping apps: the idle check (a tailer consumer) and the wakes. */
    sleeper: Sleeper;
  }
}

export class Sleeper {
  private readonly env: Services;
  private readonly opts: SleeperOptions;
  private readonly startedAt: number;
  private attribution: ReadonlyMap<string, { appId: string }> = new Map();
  private lastSeen = new Map<string, number>();
  private locks = new Map<string, Promise<unknown>>();
  private waking = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private checking: Promise<string[]> | null = null;
  /** Requests that reached the wake path, and wakes actually run (one per sleeping episode). */
  readonly counts = { wakeRequests: 0, wakes: 0, sleeps: 0 };

  constructor(env: Services, opts: SleeperOptions = {}) {
    this.env = env;
    this.opts = opts;
    this.startedAt = this.now();
  }

  private now(): number {
    return (this.opts.now ?? this.env.now)();
  }

  /** The tailer's observer: one map lookup per access-log line. */
  readonly observe = (e: AccessEntry): void => {
    const a = this.attribution.get(hostKey(e.host));
    if (!a) return;
    const prev = this.lastSeen.get(a.appId);
    if (prev === undefined || e.at > prev) this.lastSeen.set(a.appId, e.at);
  };

  /** hostname -> app, from the plan Caddy serves (the same one request metrics use). */
  setAttribution(map: ReadonlyMap<string, { appId: string }>): void {
    this.attribution = map;
  }

  /** The last request through the proxy for the app, as the access log told it (epoch ms). */
  lastRequestAt(appId: string): number | null {
    return this.lastSeen.get(appId) ?? null;
  }

  start(tailer: Pick<AccessLogTailer, 'subscribe'>): void {
    if (this.timer) return;
    this.unsubscribe = tailer.subscribe(this.observe);
    this.timer = setInterval(
      () => void this.check().catch((err) => this.env.log.warn({ err: String(err) }, 'idle check failed')),
      this.opts.intervalMs ?? 30_000,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unsubscribe?.();
    await this.checking?.catch(() => {});
    await Promise.allSettled([...this.locks.values()]);
  }

  /** One app's operations in order: a wake waits for a sleep under way, and the reverse. */
  private serial<T>(appId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(appId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const held = next.catch(() => {});
    this.locks.set(appId, held);
    void held.then(() => {
      if (this.locks.get(appId) === held) this.locks.delete(appId);
    });
    return next;
  }

  /** Puts to sleep every app idle for its `sleep_after_minutes` at `at`; answers their ids. */
  check(at = this.now()): Promise<string[]> {
    this.checking ??= this.runCheck(at).finally(() => (this.checking = null));
    return this.checking;
  }

  private async runCheck(at: number): Promise<string[]> {
    // Without the proxy nothing could wake the app again.
    if (!this.env.edge.proxy.enabled) return [];
    const rows = await sleepCandidates(this.env.db);
    const slept: string[] = [];
    for (const row of rows) {
      const idleMs = row.sleep_after_minutes! * 60_000;
      if (at - this.lastActivity(row.id, row.updated_at) < idleMs) continue;
      try {
        if (await this.serial(row.id, () => this.putToSleep(row.id, at, idleMs))) slept.push(row.id);
      } catch (err) {
        this.env.log.warn({ err: String(err), app: row.name }, 'could not put an idle app to sleep');
      }
    }
    return slept;
  }

  private lastActivity(appId: string, updatedAt: string): number {
    return Math.max(this.lastSeen.get(appId) ?? 0, Date.parse(updatedAt) || 0, this.startedAt);
  }

  private async putToSleep(appId: string, at: number, idleMs: number): Promise<boolean> {
    const env = this.env;
    // A preview's own row too: previews sleep like apps (lib/previews), reached here by id only.
    const app = await getApp(env.db, appId, { includePreview: true }).catch(() => null);
    if (!app || app.sleep_after_minutes === null || this.waking.has(appId)) return false;
    // Looked at again under the lock: a request or a deploy may have come meanwhile.
    const row = await appUpdatedAt(env.db, appId);
    if (!row || at - this.lastActivity(appId, row.updated_at) < idleMs) return false;
    const status = await refreshAppStatus(env, app);
    if (!AWAKE_STATUSES.has(status)) return false;
    const running = (await listAppContainers(env.engine, app.name)).filter((c) => c.state === 'running');
    if (!running.length) return false;
    const memory = await memoryOf(
      env.engine,
      running.map((c) => c.id),
    );
    if (!(await setSleeping(env.db, appId, this.now()))) return false;
    // The wake path first: from here on, a request wakes the app instead of finding it stopped.
    const error = await this.toWakePath(app.name, appId);
    if (error !== null) {
      await setSleeping(env.db, appId, null);
      env.log.warn({ app: app.name, error }, 'the proxy could not take the wake route; the app stays up');
      return false;
    }
    await stackStop(env.engine, app.name);
    await removeUpstreams(env.db, appId);
    await refreshAppStatus(env, app);
    this.counts.sleeps++;
    const idleMinutes = app.sleep_after_minutes;
    const scope = await previewScope(env.db, appId);
    publishAppEvent(env.bus, {
      type: 'sleeping',
      app_id: appId,
      app: app.name,
      idle_minutes: idleMinutes,
      memory_bytes: memory,
      at: new Date(this.now()).toISOString(),
      ...scope,
    });
    await this.audit('app.sleeping', app, 200, { idle_minutes: idleMinutes, memory_bytes: memory, ...scope });
    env.log.info(
      { app: app.name, idle_minutes: idleMinutes, memory_bytes: memory },
      'app asleep after its idle time',
    );
    return true;
  }

  /**
   * Sends the (marked) app's hosts to the wake path: on one host the resolver drops its answers and
   * Caddy has picked that up; in cluster mode the wake route is loaded. Null when done, else why not.
   */
  private async toWakePath(name: string, appId: string): Promise<string | null> {
    const env = this.env;
    if (env.edge.resolver) {
      await env.edge.publish(appId);
      return null;
    }
    const st = await env.edge.proxy.sync(`sleep ${name}`);
    return st.synced ? null : (st.error ?? 'not synced');
  }

  /**
   * Wakes the app if it sleeps (resolves at once when it is awake). Every caller during one wake
   * shares it: the containers start once.
   */
  wake(appId: string): Promise<void> {
    let p = this.waking.get(appId);
    if (p) return p;
    p = this.serial(appId, () => this.runWake(appId)).finally(() => this.waking.delete(appId));
    this.waking.set(appId, p);
    return p;
  }

  private async runWake(appId: string): Promise<void> {
    const env = this.env;
    const app = await getApp(env.db, appId, { includePreview: true });
    if (!(await isSleeping(env.db, appId))) return;
    const t0 = Date.now();
    this.counts.wakes++;
    const scope = await previewScope(env.db, appId);
    publishAppEvent(env.bus, {
      type: 'waking',
      app_id: appId,
      app: app.name,
      at: new Date(this.now()).toISOString(),
      ...scope,
    });
    try {
      await stackStart(env.engine, app.name);
      const settings = await serviceSettings(env.db, appId);
      const deadline = t0 + env.config.wakeTimeoutSeconds * 1000;
      const running = (await listAppContainers(env.engine, app.name)).filter((c) => c.state === 'running');
      if (!running.length) throw new WakeError('no container of the app stayed up');
      await Promise.all(
        running.map((c) =>
          wakeGate(
            env.engine,
            c.id,
            c.service,
            settings.get(c.service) ?? { port: null, health_path: null },
            deadline,
          ),
        ),
      );
      // The routes follow the started containers, and the mark is cleared.
      await followRunning(env, app);
      if (await isSleeping(env.db, appId))
        throw new WakeError('the proxy did not take the routes to the started containers');
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      publishAppEvent(env.bus, {
        type: 'wake_failed',
        app_id: appId,
        app: app.name,
        error,
        at: new Date(this.now()).toISOString(),
        ...scope,
      });
      await this.audit('app.wake_failed', app, 503, { error, ...scope });
      throw e instanceof WakeError ? e : new WakeError(error);
    }
    await refreshAppStatus(env, app);
    const ms = Date.now() - t0;
    publishAppEvent(env.bus, {
      type: 'woken',
      app_id: appId,
      app: app.name,
      duration_ms: ms,
      at: new Date(this.now()).toISOString(),
      ...scope,
    });
    await this.audit('app.woken', app, 200, { duration_ms: ms, ...scope });
    env.log.info({ app: app.name, duration_ms: ms }, 'app woken by a request');
  }

  private async audit(
    event: string,
    app: Pick<App, 'id'>,
    outcome: number,
    detail: Record<string, unknown>,
  ): Promise<void> {
    await recordAudit(this.env.db, {
      route: SETTING_ROUTE,
      actorType: 'system',
      actor: 'sleep',
      event,
      target: app.id,
      // A preview's line belongs to its app: an operator limited to that app reads it.
      appId: typeof detail.parent_app_id === 'string' ? detail.parent_app_id : app.id,
      outcome,
      detail,
    }).catch((err) => this.env.log.warn({ err: String(err) }, 'audit entry not written'));
  }
}

/** Memory in use by the containers (page cache excluded, as `docker stats` shows it); null when unknown. */
export async function memoryOf(engine: Engine, ids: readonly string[]): Promise<number | null> {
  let total = 0;
  for (const id of ids) {
    try {
      // one-shot: a single sample (no second one a second later for CPU rates).
      const s = await guard(engine, () =>
        engine.docker.getContainer(id).stats({ stream: false, 'one-shot': true } as { stream: false }),
      );
      total += statsFrom(s as never).memory_bytes;
    } catch {
      return null;
    }
  }
  return total;
}

/**
 * What a woken container must pass before the held request goes to it: its healthcheck, or its
 * health_path (as a deploy's gate), else its port accepting a connection. A deploy's settle period
 * is not waited for: a request is waiting, and a container that fails shows in the app's status.
 */
async function wakeGate(
  engine: Engine,
  id: string,
  service: string,
  s: { port: number | null; health_path: string | null },
  deadline: number,
): Promise<void> {
  const left = () => Math.max(1, deadline - Date.now());
  const info = await guard(engine, () => engine.docker.getContainer(id).inspect());
  const test = info.Config.Healthcheck?.Test;
  if (test && test.length && test[0] !== 'NONE')
    return waitForCondition(engine, id, 'service_healthy', { timeoutMs: left(), pollMs: 100 });
  if (s.health_path) {
    await healthGate(engine, id, service, {
      timeoutMs: left(),
      settleMs: 0,
      port: s.port,
      healthPath: s.health_path,
      probe: defaultProbeMode(),
      log: () => {},
    });
    return;
  }
  const port = s.port;
  const ip = Object.values(info.NetworkSettings.Networks ?? {}).find((n) => n?.IPAddress)?.IPAddress;
  if (!port || !ip) return;
  for (;;) {
    if (await accepts(ip, port)) return;
    if (Date.now() > deadline)
      throw new WakeError(`${service}: port ${port} did not accept connections in time`);
    await pause(25);
  }
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port, timeout: 1000 });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
    sock.once('timeout', () => done(false));
  });
}
