// The services handed to every handler as `ctx.env`. Tests and other hosts build their own.
import type { Config } from './config.js';
import type { Db } from './db/index.js';
import type { Bus } from './events/bus.js';
import type { Sealer } from './crypto/seal.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics/index.js';
import type { RateLimiter } from './auth/ratelimit.js';
import type { LoginGuard } from './auth/guard.js';
import type { Engine } from './docker/index.js';
import type { GitAuth } from './apps/model.js';
import type { AccessLogTailer } from './traffic/tailer.js';
import type { TrafficMonitor } from './traffic/monitor.js';
import type { Deployments } from './deploy/types.js';
import type { Edge } from './proxy/edge.js';
import type { RequestSeries } from './series/requests.js';
import type { VitalsSampler } from './series/vitals.js';
import type { Notifier } from './notify/notifier.js';
import type { CrashWatcher } from './apps/crash.js';

/**
 * What the rest of the control plane uses of lib/apps/sleep.ts's Sleeper (declared here because that
 * module needs the Env: importing its type would make a cycle).
 */
export interface SleeperPort {
  /** Wakes the app if it sleeps; concurrent callers share one wake. */
  wake(appId: string): Promise<void>;
  /** Puts to sleep the apps idle at `at` (default now); answers their ids. */
  check(at?: number): Promise<string[]>;
  setAttribution(map: ReadonlyMap<string, { appId: string }>): void;
  start(tailer: Pick<AccessLogTailer, 'subscribe'>): void;
  stop(): Promise<void>;
  readonly counts: { wakeRequests: number; wakes: number; sleeps: number };
}

// ctx.env of every handler (lib/http/handler.ts) is these services.
declare module './http/handler.js' {
  interface Services extends Env {}
}

export interface Env {
  config: Config;
  db: Db;
  bus: Bus;
  sealer: Sealer;
  log: Logger;
  metrics: Metrics;
  /** Signs `svc_pre` and derives CSRF tokens; generated once per instance. */
  signingKey: Uint8Array;
  authLimiter: RateLimiter;
  /** Per-account login throttling that known devices bypass. */
  loginGuard: LoginGuard;
  /** The Docker engine (dockerode); unreachable engines surface as 503 naming the socket. */
  engine: Engine;
  /** One reader of the proxy's access log, feeding every consumer. */
  tailer: AccessLogTailer;
  /** The traffic anomaly monitor; null when SVC_SECURITY_MONITOR=false. */
  monitor: TrafficMonitor | null;
  /** Runs git with the app's deploy key when it has one (set up by the keys module). */
  gitAuth?: GitAuth;
  /** The deployment queue and workers; started by runtime/background.ts. */
  deployments: Deployments;
  /** Caddy sync, host checker, DNS check (lib/proxy/edge.ts); started by runtime/background.ts. */
  edge: Edge;
  /** Request metrics from the access log (a tailer consumer); 10 s / 1 min / 1 h rows. */
  series: RequestSeries;
  /** Host vitals every 10 s; its latest sample serves the `host` topic and /metrics too. */
  vitals: VitalsSampler;
  /** Notification channels: bus events to Discord/Slack through the outbound guard. */
  notifier: Notifier;
  /** Sleeping apps: the idle check (a tailer consumer) and the wakes (lib/apps/sleep.ts). */
  sleeper: SleeperPort;
  /** Crash detection from the engine's events; set while the background work runs. */
  crashes?: CrashWatcher;
  /** Drains and restarts the process; set by the host that can (`svc serve`), absent elsewhere. */
  requestRestart?: () => void;
  now: () => number;
}
