// Builds the services (`env`) from configuration: database, migrations, keys, bus, metrics.
import type { Config } from '#lib/config.js';
import type { Services } from '#lib/http/handler.js';
import { dialectOf, openDatabase, migrate, type Db } from '#lib/db/index.js';
import { snapshotBeforeUpgrade, recordVersion } from '#lib/db/upgrade.js';
import { productVersion } from '#lib/version.js';
import { Bus } from '#lib/events/bus.js';
import { createSealer, type Sealer } from '#lib/crypto/seal.js';
import { createLogger, type Logger } from '#lib/log.js';
import { createMetrics } from '#lib/metrics/index.js';
import { RateLimiter } from '#lib/auth/ratelimit.js';
import { LoginGuard } from '#lib/auth/guard.js';
import { loadSigningKey } from '#lib/auth/signing.js';
import { rehashRecoveryCodes } from '#lib/auth/totp.js';
import {
  chooseMasterKey,
  masterKeyPath,
  MasterKeyError,
  readNextKey,
  nextMasterKeyPath,
  type MasterKeyChoice,
} from '#lib/crypto/master-key.js';
import { hasSealedData, unopenableSealedData } from '#lib/instance/sealed-rows.js';
import { tightenPrivateDir } from '#lib/util/private-dir.js';
import { prepareSetup, setupTokenPath } from '#lib/auth/setup.js';
import { createEngine } from '#lib/docker/engine.js';
import { registryCredentials } from '#lib/registries/index.js';
import { adoptLegacyObjects, loadOwner, type LoadedOwner } from '#lib/instance/owner.js';
import { AccessLogTailer } from '#lib/traffic/tailer.js';
import { DeployService } from '#lib/deploy/service.js';
import { RunService } from '#lib/jobs/runner.js';
import { registerTrafficMetrics } from '#lib/metrics/traffic.js';
import { registerPlatformMetrics } from '#lib/metrics/platform.js';
import { deployKeyGitAuth } from '#lib/keys/store.js';
import { createEdge, type EdgeOptions } from '#lib/proxy/edge.js';
import { hostAttribution } from '#lib/proxy/config.js';
import { RequestSeries } from '#lib/series/requests.js';
import { VitalsSampler } from '#lib/series/vitals.js';
import { Notifier } from '#lib/notify/notifier.js';
import { Sleeper, type SleeperOptions } from '#lib/sleep/index.js';
import { totalmem } from 'node:os';
import { ResourceSampler } from '#lib/resources/sampler.js';
import { readContainers } from '#lib/resources/readings.js';
import { readSwarm } from '#lib/resources/swarm-readings.js';
import { AgentReadings, AGENT_IMAGE } from '#lib/resources/agent.js';
import { Alerts } from '#lib/alerts/service.js';
import { LogDrains } from '#lib/drains/service.js';

export interface BootNotice {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  msg: string;
}

export interface BootOptions {
  /** `:memory:` for tests that need no file. */
  dataDir?: string;
  log?: Logger;
  now?: () => number;
  /** Collects boot messages instead of logging them, so the caller can log "listening" first. */
  notices?: BootNotice[];
  /** Timings of the edge's background work (tests shorten them). */
  edge?: EdgeOptions;
  /** The idle check's period and clock (tests drive them). */
  sleep?: SleeperOptions;
}

/** Resolves the master key and checks that it opens what is already sealed; stops the boot otherwise. */
async function masterKey(db: Db, dataDir: string, explicit: Buffer | null): Promise<MasterKeyChoice> {
  const choice: MasterKeyChoice =
    dataDir === ':memory:'
      ? { key: explicit, source: explicit ? 'env' : null, generated: false, fileKey: null }
      : chooseMasterKey(dataDir, explicit, { generate: true, hasSealedData: await hasSealedData(db) });
  if (!choice.key) return choice;
  const failed = await unopenableSealedData(db, createSealer(choice.key));
  if (failed.length === 0) return choice;
  const from = choice.source === 'env' ? 'SVC_MASTER_KEY' : `the key in ${masterKeyPath(dataDir)}`;
  const next = readNextKey(dataDir);
  if (next && (await unopenableSealedData(db, createSealer(next))).length === 0) {
    throw new MasterKeyError(
      `${from} cannot open the secrets sealed in ${dataDir}, but the key in ${nextMasterKeyPath(dataDir)} does: ` +
        'a master key rotation re-sealed them and stopped before putting the new key in place. ' +
        'Run `svc rotate-master-key` again to finish it (or put that key where the service reads it yourself)',
    );
  }
  const fileOpens =
    choice.source === 'env' &&
    choice.fileKey &&
    !choice.fileKey.equals(choice.key) &&
    (await unopenableSealedData(db, createSealer(choice.fileKey))).length === 0;
  throw new MasterKeyError(
    `${from} cannot open the secrets already sealed in ${dataDir} (${failed.join(', ')}): ` +
      (fileOpens
        ? `the key in ${masterKeyPath(dataDir)} does; unset SVC_MASTER_KEY or set it to that key`
        : 'start with the key that sealed them (SVC_MASTER_KEY, or the master.key file from your backup)'),
  );
}

export async function createEnv(config: Config, opts: BootOptions = {}): Promise<Services> {
  const log = opts.log ?? createLogger(config.logLevel);
  const notice = (level: BootNotice['level'], fields: Record<string, unknown>, msg: string) =>
    opts.notices ? opts.notices.push({ level, fields, msg }) : log[level](fields, msg);
  const dataDir = opts.dataDir ?? config.dataDir;
  const db = openDatabase({ dataDir, databaseUrl: config.databaseUrl });
  let key: MasterKeyChoice;
  let sealer: Sealer;
  let signingKey: Uint8Array;
  let owner: LoadedOwner;
  try {
    // On PostgreSQL the pre-upgrade copy is the operator's own dump (docs/operating.md): the
    // migrations still run in one transaction, so a failed one leaves the schema as it was.
    if (dataDir !== ':memory:' && dialectOf(db) === 'sqlite') {
      const kept = await snapshotBeforeUpgrade(db, dataDir);
      if (kept) {
        notice(
          'info',
          { copy: kept.file, from_version: kept.fromVersion, pending: kept.pending.length },
          `kept a copy of the database from ${kept.fromVersion} before migrating (svc rollback-upgrade puts it back)`,
        );
      }
    }
    await migrate(db);
    if (dataDir !== ':memory:') recordVersion(dataDir, productVersion());
    owner = await loadOwner(db);
    key = await masterKey(db, dataDir, config.masterKey);
    sealer = createSealer(key.key);
    signingKey = await loadSigningKey(db, sealer);
    const rekeyed = await rehashRecoveryCodes(db, sealer);
    if (rekeyed) notice('info', { recovery_codes: rekeyed }, 'recovery codes re-keyed under the master key');
    if (dataDir !== ':memory:') tightenPrivateDir(dataDir);
  } catch (e) {
    await db.destroy();
    throw e;
  }
  config = { ...config, masterKey: key.key, masterKeySource: key.source };
  if (key.generated) {
    const path = masterKeyPath(dataDir);
    notice(
      'warn',
      { master_key_file: path },
      `generated the master key in ${path}: back it up now (sealed secrets cannot be recovered without it); a key kept beside the data protects less than SVC_MASTER_KEY supplied from outside`,
    );
  } else if (key.source === 'env' && key.fileKey && !key.fileKey.equals(key.key!)) {
    notice(
      'warn',
      { master_key_file: masterKeyPath(dataDir) },
      `SVC_MASTER_KEY is in use; ${masterKeyPath(dataDir)} holds another key that nothing uses: delete it`,
    );
  }
  if (!key.key)
    notice(
      'warn',
      {},
      'SVC_MASTER_KEY is not set: secrets cannot be sealed; operations that need it answer 503',
    );
  const env: Services = {
    config,
    db,
    bus: new Bus(),
    sealer,
    log,
    metrics: createMetrics(),
    signingKey,
    authLimiter: new RateLimiter(config.authRateLimit, 60_000),
    loginGuard: new LoginGuard(config.authAccountLimit),
    engine: createEngine({
      socketPath: config.dockerSocket,
      owner: owner.owner,
      // Every pull, build and swarm service finds the stored registry credentials here.
      credentials: registryCredentials({ db, sealer, config, now: () => env.now() }),
    }),
    tailer: new AccessLogTailer(config.accessLog),
    monitor: null,
    // Replaced just below: the service needs the finished env.
    deployments: undefined as unknown as DeployService,
    edge: undefined as unknown as Services['edge'],
    series: undefined as unknown as Services['series'],
    vitals: undefined as unknown as Services['vitals'],
    notifier: undefined as unknown as Services['notifier'],
    sleeper: undefined as unknown as Services['sleeper'],
    runs: undefined as unknown as Services['runs'],
    resources: undefined as unknown as Services['resources'],
    alerts: undefined as unknown as Services['alerts'],
    drains: undefined as unknown as Services['drains'],
    now: opts.now ?? Date.now,
  };
  if (owner.pending) {
    // An upgrade: the objects older builds made carry no instance id. Retried when the engine answers again.
    await adoptLegacyObjects(db, env.engine).then(
      (n) => notice('info', { adopted: n }, 'engine objects made before the instance id adopted by id'),
      (e) =>
        notice(
          'warn',
          { err: String(e) },
          'could not list the engine objects to adopt; retried when the engine answers',
        ),
    );
  }
  env.deployments = new DeployService(env);
  env.runs = new RunService(env, config.deploy.runsMax);
  env.edge = createEdge(
    { db, config, sealer: env.sealer, bus: env.bus, log, now: () => env.now(), engine: env.engine },
    opts.edge,
  );
  env.series = new RequestSeries({
    db,
    log,
    now: () => env.now(),
    attribution: async () => hostAttribution((await env.edge.plan()).routes),
  });
  env.sleeper = new Sleeper(env, opts.sleep);
  env.edge.proxy.onPlan((routes) => {
    const byHost = hostAttribution(routes);
    env.series.setAttribution(byHost);
    env.sleeper.setAttribution(byHost);
  });
  env.notifier = new Notifier(
    {
      db,
      sealer: env.sealer,
      log,
      baseUrl: config.controlDomain ? `https://${config.controlDomain}` : config.publicUrl,
      cooldownSeconds: config.security.cooldownSeconds,
      now: () => env.now(),
    },
    { allow: config.notifyAllow },
  );
  env.vitals = new VitalsSampler({ db, dataDir: config.dataDir, log, now: () => env.now() });
  observe(env);
  if (config.security.monitor) {
    const s = config.security;
    // Loaded only when enabled.
    const { TrafficMonitor } = await import('#lib/traffic/monitor.js');
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
  registerPlatformMetrics(env.metrics, { db, engine: env.engine, vitals: env.vitals });
  return env;
}

/** Resource history, alert rules and log drains (docs/alerts.md, docs/log-drains.md). */
function observe(env: Services): void {
  const { config, db, log } = env;
  const o = config.observe;
  env.resources = new ResourceSampler({
    db,
    log,
    now: () => env.now(),
    intervalMs: o.resourceIntervalSeconds * 1000,
    hostMemory: totalmem,
    ...resourceReader(env),
  });
  env.alerts = new Alerts({
    db,
    bus: env.bus,
    log,
    now: () => env.now(),
    intervalMs: o.alertIntervalSeconds * 1000,
    notifier: env.notifier,
    resources: env.resources,
    vitals: env.vitals,
    series: env.series,
  });
  env.drains = new LogDrains({
    db,
    sealer: env.sealer,
    bus: env.bus,
    engine: env.engine,
    log,
    now: () => env.now(),
    swarm: config.cluster.mode === 'swarm',
    bufferLines: o.drainBufferLines,
    transport: { allow: config.notifyAllow },
  });
}

/** Where the samples come from: the engine's containers, or in cluster mode every task. */
function resourceReader(env: Services): {
  read: () => ReturnType<typeof readContainers>;
  close?: () => void;
} {
  const now = () => env.now();
  if (env.config.cluster.mode !== 'swarm') return { read: () => readContainers(env.engine, now) };
  const agent = new AgentReadings({
    engine: env.engine,
    image: env.config.imageMap[AGENT_IMAGE] ?? AGENT_IMAGE,
    intervalSeconds: env.config.observe.resourceIntervalSeconds,
    log: env.log,
    now,
  });
  return { read: () => readSwarm(env.engine, agent, now), close: () => agent.stop() };
}

/** First boot: writes the one-time setup token and prints it once. */
export async function announceSetup(env: Services, notices?: BootNotice[]): Promise<void> {
  const { open, created } = await prepareSetup(env.db, env.config.dataDir);
  const fields = { setup_token_file: setupTokenPath(env.config.dataDir) };
  const say = (msg: string) =>
    notices ? notices.push({ level: 'info', fields, msg }) : env.log.info(fields, msg);
  if (created) say(`setup is open: one-time setup token ${created}`);
  else if (open) say('setup is open: the one-time setup token is in the file (or run `svc setup-token`)');
}
