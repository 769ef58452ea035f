// Builds the services (`env`) from configuration: database, migrations, keys, bus, metrics.
import type { Config } from '../lib/config.js';
import type { Env } from '../lib/env.js';
import { openDb, migrate } from '../lib/db/index.js';
import { Bus } from '../lib/events/bus.js';
import { createSealer } from '../lib/crypto/seal.js';
import { createLogger, type Logger } from '../lib/log.js';
import { createMetrics } from '../lib/metrics/index.js';
import { RateLimiter } from '../lib/auth/ratelimit.js';
import { loadSigningKey } from '../lib/auth/signing.js';
import { prepareSetup, setupTokenPath } from '../lib/auth/setup.js';
import { createEngine } from '../lib/docker/engine.js';
import { AccessLogTailer } from '../lib/traffic/tailer.js';
import { DeployService } from '../lib/deploy/service.js';
import { registerTrafficMetrics } from '../lib/metrics/traffic.js';
import { deployKeyGitAuth } from '../lib/keys/store.js';
import { createEdge, type EdgeOptions } from '../lib/proxy/edge.js';
import { hostAttribution } from '../lib/proxy/config.js';
import { RequestSeries } from '../lib/series/requests.js';
import { VitalsSampler } from '../lib/series/vitals.js';

export interface BootOptions {
  /** `:memory:` for tests that need no file. */
  dataDir?: string;
  log?: Logger;
  now?: () => number;
  /** Timings of the edge's background work (tests shorten them). */
  edge?: EdgeOptions;
}

export async function createEnv(config: Config, opts: BootOptions = {}): Promise<Env> {
  const log = opts.log ?? createLogger(config.logLevel);
  const db = openDb(opts.dataDir ?? config.dataDir);
  await migrate(db);
  const env: Env = {
    config,
    db,
    bus: new Bus(),
    sealer: createSealer(config.masterKey),
    log,
    metrics: createMetrics(),
    signingKey: await loadSigningKey(db),
    authLimiter: new RateLimiter(config.authRateLimit, 60_000),
    engine: createEngine({ socketPath: config.dockerSocket }),
    tailer: new AccessLogTailer(config.accessLog),
    monitor: null,
    // Replaced just below: the service needs the finished env.
    deployments: undefined as unknown as DeployService,
    edge: undefined as unknown as Env['edge'],
    series: undefined as unknown as Env['series'],
    vitals: undefined as unknown as Env['vitals'],
    now: opts.now ?? Date.now,
  };
  env.deployments = new DeployService(env);
  env.edge = createEdge({ db, config, sealer: env.sealer, bus: env.bus, log, now: () => env.now() }, opts.edge);
  env.series = new RequestSeries({ db, log, now: () => env.now(), attribution: async () => hostAttribution((await env.edge.plan()).routes) });
  env.edge.proxy.onPlan((routes) => env.series.setAttribution(hostAttribution(routes)));
  env.vitals = new VitalsSampler({ db, dataDir: config.dataDir, log, now: () => env.now() });
  if (config.security.monitor) {
    const s = config.security;
    // Loaded only when enabled.
    const { TrafficMonitor } = await import('../lib/traffic/monitor.js');
    env.monitor = new TrafficMonitor({
      windowSeconds: s.windowSeconds,
      requestThreshold: s.requestThreshold,
      errorThreshold: s.errorThreshold,
      cooldownSeconds: s.cooldownSeconds,
      maxIps: s.maxIps,
      allowlist: s.allowlist,
      now: () => env.now(),
      // Notification channels listen for this event on the bus.
      onAnomaly: (a) => env.bus.publish('security', { type: 'traffic_anomaly', ...a }),
    });
  }
  env.gitAuth = deployKeyGitAuth(db, env.sealer, config.dataDir);
  registerTrafficMetrics(env.metrics, env.tailer, () => env.monitor);
  if (!config.masterKey) log.warn('SVC_MASTER_KEY is not set: secrets cannot be sealed; operations that need it answer 503');
  return env;
}

/** First boot: writes the one-time setup token and prints it once. */
export async function announceSetup(env: Env): Promise<void> {
  const { open, created } = await prepareSetup(env.db, env.config.dataDir);
  if (created) {
    env.log.info({ setup_token_file: setupTokenPath(env.config.dataDir) }, `setup is open: one-time setup token ${created}`);
  } else if (open) {
    env.log.info({ setup_token_file: setupTokenPath(env.config.dataDir) }, 'setup is open: the one-time setup token is in the file (or run `svc setup-token`)');
  }
}
