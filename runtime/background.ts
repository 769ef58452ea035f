// Long-running work started with the server and stopped before the database closes:
// the access-log tailer feeding the traffic monitor, and the Docker event follower.
import type { Services } from '#lib/http/handler.js';
import type { Running } from './server.js';
import { followEvents, type ContainerEvent } from '#lib/docker/events.js';
import { getAppByName } from '#lib/apps/store.js';
import { publishAppEvent } from '#lib/apps/events.js';
import { registerStreams } from '#lib/deploy/streams.js';
import { defaultControlUpstream } from '#lib/proxy/rows.js';
import { recoverDatabases } from '#lib/databases/index.js';
import { recoverRuns } from '#lib/backups/recovery.js';
import { settleJobs } from '#lib/backups/jobs.js';
import { BackupScheduler } from '#lib/backups/scheduler.js';
import { productVersion } from '#lib/version.js';
import { CrashWatcher } from '#lib/apps/crash.js';
import { adoptLegacyObjects } from '#lib/instance/owner.js';
import { readRecoveryMarker, runRecovery } from '#lib/instance/recovery.js';
import { PreviewSweeper } from '#lib/previews/sweeper.js';
import { startJoinTokenSweep } from '#lib/cluster/join.js';
import { JobScheduler } from '#lib/jobs/scheduler.js';
import { recoverJobRuns } from '#lib/jobs/recovery.js';
import { registerRunStream } from '#lib/jobs/streams.js';
import { applyMetadataGuard } from '#lib/net/metadata-guard.js';

export function startBackground(env: Services, running: Running): void {
  // App containers and builds never reach link-local (cloud metadata) unless SVC_ALLOW_METADATA=true.
  void applyMetadataGuard({
    allow: env.config.allowMetadata,
    cluster: env.config.cluster.mode === 'swarm',
  }).then((s) =>
    env.log[s.mode === 'unenforced' ? 'warn' : 'info']({ link_local: s.mode }, `link-local: ${s.detail}`),
  );
  if (env.monitor) env.tailer.subscribe(env.monitor.observe);
  // Request metrics read the same log; host vitals are sampled every 10 s. Close handlers run
  // last-registered first: the tailer stops before the series writes its last buckets.
  env.series.start(env.tailer);
  env.vitals.start();
  env.tailer.start();
  running.onClose(() => env.series.stop());
  running.onClose(() => env.vitals.stop());
  running.onClose(() => env.tailer.stop());
  // Sleeping apps: the last request per app from the same log, and the idle check.
  env.sleeper.start(env.tailer);
  running.onClose(() => env.sleeper.stop());

  // The edge (SVC_PROXY): Caddy's config from the rows, its periodic check, the host checker.
  if (env.config.proxy.enabled) {
    env.edge.setControlUpstream(defaultControlUpstream(env.config, running.port));
    env.edge.start();
    running.onClose(() => env.edge.stop());
  }

  // Data: what the process died during ends interrupted (partial artifacts removed); then the
  // backup scheduler, whose first tick runs once whatever slot was missed while it was down.
  // After `svc restore-instance` (its marker): the run the restored copy was taken during is that
  // backup's success, and the instance's apps and databases come back (lib/instance/recovery.ts).
  const scheduler = new BackupScheduler(env);
  const marker = readRecoveryMarker(env.config.dataDir);
  const restored = marker
    ? { run_id: marker.run_id, sha256: marker.sha256, size_bytes: marker.size_bytes }
    : undefined;
  const data = recoverDatabases(env)
    .then(() => recoverRuns(env, restored))
    .then(() => scheduler.start())
    .catch((err) => env.log.error({ err }, 'backup recovery failed'));
  let recovery: Promise<unknown> | null = null;
  running.onClose(async () => {
    await data;
    await recovery;
    await scheduler.stop();
    await settleJobs();
  });
  startJobs(env, running);
  // Notification channels listen to the bus from here on; boot is the first thing they hear.
  env.notifier.start(env.bus);
  running.onClose(() => env.notifier.stop());
  startObserving(env, running);
  env.bus.publish('instance', {
    type: 'control_plane_started',
    version: productVersion(),
    at: new Date(env.now()).toISOString(),
  });

  followEngine(env, running);

  // Deployments: boot recovery (interrupted ones cleaned up), then the queue's workers and reaper.
  const streams = registerStreams(env);
  running.onClose(() => streams.stopAll());
  const deploys = env.deployments
    .start()
    .catch((err) => env.log.error({ err }, 'deployment service failed to start'));
  if (marker)
    recovery = Promise.all([data, deploys])
      .then(() => runRecovery(env))
      .catch((err) => env.log.error({ err }, 'recovery of the restored instance failed'));
  running.onClose(async () => {
    await deploys;
    await env.deployments.stop();
  });

  // Previews past their time to live are removed with everything they made.
  const sweeper = new PreviewSweeper(env);
  sweeper.start();
  running.onClose(() => sweeper.stop());

  // Cluster mode: a join command's worker token is rotated once the command has expired.
  if (env.config.cluster.mode === 'swarm') running.onClose(startJoinTokenSweep(env));
}

/**
 * Jobs: runs a stopped control plane left are followed again (or recorded interrupted), then the
 * scheduler, whose first wake records the due times missed while it was down.
 */
function startJobs(env: Services, running: Running): void {
  registerRunStream(env);
  const jobScheduler = new JobScheduler(env);
  env.jobScheduler = jobScheduler;
  const jobs = recoverJobRuns(env)
    .catch((err) => env.log.warn({ err: String(err) }, 'recovery of job runs failed'))
    .then(() => jobScheduler.start());
  running.onClose(async () => {
    await jobs;
    await jobScheduler.stop();
    await env.runs.stop();
  });
}

/** Crashes and container events from the engine's event stream; a reconnect finishes what waited. */
function followEngine(env: Services, running: Running): void {
  const crashes = new CrashWatcher({
    db: env.db,
    engine: env.engine,
    bus: env.bus,
    log: env.log,
    now: () => env.now(),
    onChange: (name) =>
      void getAppByName(env.db, name)
        .then(
          (app) =>
            app && import('#lib/apps/ops.js').then(({ refreshAppStatus }) => refreshAppStatus(env, app)),
        )
        .catch(() => {}),
  });
  env.crashes = crashes;
  running.onClose(() => crashes.stop());

  const events = new AbortController();
  followEvents(
    env.engine,
    (e) => {
      crashes.observe(e);
      onContainerEvent(env, e);
    },
    events.signal,
    {
      onError: (err) => env.log.warn({ err: String(err) }, 'docker event stream interrupted; reconnecting'),
      // The engine answers again: finish what deployments could not do while it was away.
      onConnect: (resumed) => {
        void adoptLegacyObjects(env.db, env.engine).catch((err) =>
          env.log.warn({ err: String(err) }, 'adopting older engine objects failed'),
        );
        if (resumed) {
          void env.deployments
            .recover()
            .catch((err) => env.log.warn({ err: String(err) }, 'recovery after the engine came back failed'));
          void recoverJobRuns(env).catch((err) =>
            env.log.warn({ err: String(err) }, 'recovery of job runs after the engine came back failed'),
          );
        }
      },
    },
  ).catch((err) => env.log.error({ err }, 'docker event follower stopped'));
  running.onClose(() => events.abort());
}

/**
 * Resource history, alert rules (sending what a previous run left pending first) and log drains;
 * registered after the notifier, so they close before it and an alert's notification in flight ends.
 */
function startObserving(env: Services, running: Running): void {
  env.resources.start();
  running.onClose(() => env.resources.stop());
  env.alerts.start();
  running.onClose(() => env.alerts.stop());
  void env.drains.start().catch((err) => env.log.error({ err }, 'log drains failed to start'));
  running.onClose(() => env.drains.stop());
}

// Container state changes become bus events and refresh the app's status; bursts (a stack
// coming up) are folded into one status refresh per app.
const pending = new Map<string, NodeJS.Timeout>();

function onContainerEvent(env: Services, e: ContainerEvent): void {
  void getAppByName(env.db, e.app).then(
    (app) => {
      if (!app) return;
      publishAppEvent(env.bus, {
        type: 'container',
        app_id: app.id,
        app: app.name,
        service: e.service,
        container: e.container,
        action: e.action,
        status: e.status,
        at: e.at,
      });
      if (pending.has(app.id)) return;
      pending.set(
        app.id,
        setTimeout(() => {
          pending.delete(app.id);
          // App operations load on the first container event, not at boot.
          import('#lib/apps/ops.js')
            .then(({ refreshAppStatus }) => refreshAppStatus(env, app))
            .then(
              (status) => publishAppEvent(env.bus, { type: 'status', app_id: app.id, app: app.name, status }),
              () => {},
            );
        }, 250).unref(),
      );
    },
    () => {},
  );
}
