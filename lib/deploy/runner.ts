// Running one deployment: the pipeline under an abort signal, the terminal status and its
// cleanup, and the work the engine was not there for (retried by recover()). The queue that
// decides when a deployment runs is DeployService (service.ts), which extends this.
import { join } from 'node:path';
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import { getApp, setAppStatus } from '../apps/store.js';
import { envBinding } from '../apps/env.js';
import { secretEnvRows } from '../apps/env-store.js';
import { HttpError } from '../http/errors.js';
import { GitError } from '../git/clone.js';
import { EngineUnavailableError } from '../docker/engine.js';
import { removeDeploymentContainers } from '../docker/containers.js';
import { DeployLog, masker } from './log.js';
import type { Deployment, DeployStatus } from '../apps/deployment.js';
import {
  getDeployment,
  getDeploymentRow,
  lastLogSeq,
  listActive,
  previewNaming,
  readSpec,
  transition,
  type TransitionPatch,
} from './store.js';
import type { DeployServiceOptions } from './types.js';
import { pruneImages, removeDeploymentImages } from './images.js';
import { pruneKeptImages } from '../images/keep.js';
import { defaultProbeMode, type ProbeMode } from './health.js';
import { BuildSlots } from './buildslots.js';
import { getBaseDomain } from '../domains/store.js';
import { previewScope, type PreviewScope } from '../apps/events.js';

/** Why a running deployment's signal was aborted. */
export class StopReason extends Error {
  constructor(
    readonly kind: 'cancel' | 'shutdown' | 'timeout',
    message: string,
  ) {
    super(message);
    this.name = 'StopReason';
  }
}

export interface Active {
  appId: string;
  controller: AbortController;
  done: Promise<void>;
  /** When the reaper aborted it for its timeout. */
  reapedAt?: number;
}

export abstract class DeployRunner {
  readonly opts: DeployServiceOptions;
  protected readonly running = new Map<string, Active>();
  protected stopping = false;
  /**
   * Work the engine was not there for: deployments whose containers and images are still to be
   * removed (by id, with the app's name), and apps whose status is still to be settled. Retried
   * by recover() when the engine answers again.
   */
  private readonly pendingCleanup = new Map<string, string>();
  private readonly unsettled = new Map<string, App>();
  /** Image builds at once across apps (SVC_BUILD_CONCURRENCY), within the deploy concurrency. */
  protected readonly buildSlots: BuildSlots;
  /** The preview fields of the apps whose deployments run now (none for an app that is not one). */
  private readonly scopes = new Map<string, PreviewScope | Record<never, never>>();

  constructor(
    protected readonly env: Services,
    opts: Partial<DeployServiceOptions> = {},
  ) {
    this.opts = {
      workRoot: join(env.config.dataDir, 'work'),
      cloneTimeoutMs: 300_000,
      cloneMaxBytes: 512 * 1024 * 1024,
      healthTimeoutMs: 180_000,
      settleMs: 5_000,
      probe: defaultProbeMode() as ProbeMode,
      maxQueue: 100,
      keepImages: env.config.deploy.keepImages,
      timeoutMs: env.config.deploy.timeoutSeconds * 1000,
      reaperEveryMs: 30_000,
      reapGraceMs: 60_000,
      ...opts,
    };
    this.buildSlots = new BuildSlots(env.config.deploy.buildConcurrency);
  }

  /** Puts a deployment on the queue (the promoted push when the one before it ends). */
  protected abstract admit(id: string, appId: string): void;

  /** Whether this process runs the deployment now. */
  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  protected async openLog(id: string): Promise<DeployLog> {
    const seq = await lastLogSeq(this.env.db, id);
    return new DeployLog(this.env.db, this.env.bus, id, this.env.now, seq);
  }

  protected async execute(id: string, slot: Active): Promise<void> {
    const row = await getDeploymentRow(this.env.db, id);
    if (!row || row.status !== 'queued' || row.waiting === 1) return;
    let app: App;
    try {
      app = await getApp(this.env.db, row.app_id, { includePreview: true });
    } catch {
      await this.finish(id, row.app_id, 'failed', { error: 'the app was deleted' }, null);
      return;
    }
    const log = await this.openLog(id);
    const signal = slot.controller.signal;
    const url = await this.previewUrl(app.id).catch(() => null);
    const scope = await previewScope(this.env.db, app.id);
    this.scopes.set(app.id, scope);
    let deployment = await getDeployment(this.env.db, app.id, id);
    const setStatus = async (status: DeployStatus, patch: TransitionPatch = {}) => {
      signal.throwIfAborted();
      const r = await transition(this.env.db, id, status, patch, { now: this.env.now() });
      if (!r) throw new StopReason('cancel', 'the deployment was finished elsewhere');
      deployment = r.deployment;
      this.publishStatus(r.deployment, app, scope);
    };
    try {
      log.mask = masker(await this.secretValues(app.id));
      await setAppStatus(this.env.db, app.id, 'deploying', this.env.now());
      this.env.bus.publish('apps', {
        type: 'status',
        app_id: app.id,
        app: app.name,
        status: 'deploying',
        ...scope,
      });
      log.write(
        `deployment ${id} (${deployment.trigger}${deployment.delivery_id ? `, delivery ${deployment.delivery_id}` : ''}) of app ${app.name} started`,
      );
      // A preview's own databases are made here, not on the request that queued it (a forge
      // gives its delivery 10 s): before anything reads the env that names them.
      if ('parent_app_id' in scope) {
        const { preparePreviewDatabases } = await import('../previews/databases.js');
        await preparePreviewDatabases(this.env, app, (line) => log.write(line, 'deploy'), signal);
      }
      const spec = deployment.trigger === 'rollback' ? await readSpec(this.env.db, id) : null;
      // The pipeline (compose, build, blue/green) loads with the first deployment, not at boot.
      const { runPipeline } = await import('./pipeline.js');
      const result = await runPipeline({
        env: this.env,
        app,
        deployment,
        pin: row.commit_pin,
        spec,
        log,
        signal,
        setStatus,
        opts: this.opts,
        buildSlots: this.buildSlots,
      });
      signal.throwIfAborted();
      log.write(
        `succeeded: the new version serves${result.replaced.length ? `; retiring ${result.replaced.join(', ')}` : ''}`,
      );
      await log.flush();
      const done = await this.finish(id, app.id, 'succeeded', {}, app);
      if (done) this.notify('deploy_succeeded', done, app, url);
      // Still within this app's slot: the next deployment of the app starts after the old
      // containers are gone.
      await result.retire();
      await log.flush();
      await refreshStatus(this.env, app).catch(() => {});
      await pruneImages(this.env.engine, app.name, this.opts.keepImages, (l) =>
        this.env.log.info({ app: app.name }, l),
      ).catch((e) => this.env.log.warn({ err: String(e) }, 'image prune failed'));
      await pruneKeptImages(this.env, app, this.opts.keepImages, (l) =>
        this.env.log.info({ app: app.name }, l),
      ).catch((e) => this.env.log.warn({ err: String(e) }, 'kept image prune failed'));
    } catch (e) {
      const reason = signal.aborted ? signal.reason : e instanceof StopReason ? e : null;
      let status: DeployStatus = 'failed';
      let message: string;
      if (reason instanceof StopReason) {
        status =
          reason.kind === 'cancel' ? 'canceled' : reason.kind === 'shutdown' ? 'interrupted' : 'failed';
        message = reason.message;
      } else message = describe(e);
      message = log.mask(message).slice(0, 2000);
      log.write(`${status}: ${message}`, status === 'failed' ? 'error' : 'deploy');
      try {
        const removed = await removeDeploymentContainers(this.env.engine, app.name, id);
        if (removed.length) log.write(`removed this deployment's containers: ${removed.join(', ')}`);
        await removeDeploymentImages(this.env.engine, app.name, id);
        this.pendingCleanup.delete(id);
      } catch (err) {
        this.pendingCleanup.set(id, app.name);
        log.write(`cleanup incomplete: ${describe(err)}; retried when the engine answers again`, 'error');
      }
      log.write('the previous version, if any, was left serving');
      await log.flush();
      const done = await this.finish(id, app.id, status, { error: message }, app);
      await this.settleAppStatus(app);
      if (done && status === 'failed') this.notify('deploy_failed', done, app, url);
    } finally {
      this.scopes.delete(app.id);
    }
  }

  /** Moves to a terminal status, publishes it, and admits the push that was waiting behind it. */
  protected async finish(
    id: string,
    appId: string,
    status: DeployStatus,
    patch: TransitionPatch,
    app: App | null,
    from?: readonly string[],
  ): Promise<Deployment | null> {
    const r = await transition(this.env.db, id, status, patch, { from, now: this.env.now() });
    if (!r) return null;
    const scope = this.scopes.get(appId) ?? (await previewScope(this.env.db, appId).catch(() => ({})));
    this.publishStatus(r.deployment, app ?? ({ id: appId, name: '' } as App), scope);
    if (r.promoted) {
      this.publishStatus(r.promoted, app ?? ({ id: appId, name: '' } as App), scope);
      if (!this.stopping) this.admit(r.promoted.id, appId);
    }
    return r.deployment;
  }

  protected async settleAppStatus(app: App): Promise<void> {
    try {
      await refreshStatus(this.env, app);
      this.unsettled.delete(app.id);
    } catch {
      // Engine unavailable: settled again by recover() when it answers.
      this.unsettled.set(app.id, app);
    }
  }

  /**
   * The engine answers again (its event stream reconnected): removes what failed deployments
   * left while it was away and settles the status of their apps. Each item is retried until done.
   */
  async recover(): Promise<void> {
    for (const [id, appName] of [...this.pendingCleanup]) {
      if (this.running.has(id)) continue; // its worker is still on it
      try {
        const removed = await removeDeploymentContainers(this.env.engine, appName, id);
        await removeDeploymentImages(this.env.engine, appName, id);
        this.pendingCleanup.delete(id);
        const log = await this.openLog(id);
        log.write(
          `the engine answers again: removed what this deployment left${removed.length ? ` (${removed.join(', ')})` : ''}`,
        );
        await log.flush();
      } catch (e) {
        this.env.log.warn(
          { err: String(e), deployment: id },
          'cleanup after the engine came back failed; retried on its next return',
        );
      }
    }
    for (const app of [...this.unsettled.values()]) {
      if ([...this.running.values()].some((a) => a.appId === app.id)) continue;
      await this.settleAppStatus(app);
    }
  }

  protected publishStatus(
    d: Deployment,
    app: Pick<App, 'id' | 'name'>,
    scope: PreviewScope | Record<never, never> = {},
  ): void {
    this.env.bus.publish('deployments', { type: 'status', ...d, app: app.name || undefined, ...scope });
  }

  /**
   * For notification channels: topic `deployments`, data.type deploy_succeeded | deploy_failed,
   * with what a message needs and no secret (the error is already masked).
   */
  protected notify(
    type: 'deploy_succeeded' | 'deploy_failed',
    d: Deployment,
    app: App,
    previewUrl: string | null = null,
  ): void {
    this.env.bus.publish('deployments', {
      type,
      ...(previewUrl ? { preview_url: previewUrl } : {}),
      ...this.scopes.get(app.id),
      deployment_id: d.id,
      app_id: app.id,
      app: app.name,
      trigger: d.trigger,
      ref: d.ref,
      commit: d.commit,
      commit_subject: d.commit_subject,
      image: d.image,
      error: d.error,
      delivery_id: d.delivery_id,
      finished_at: d.finished_at,
    });
  }

  /** A preview's address (`https://pr-<n>-<app>.<base>`), for its notifications; null for any other app. */
  protected async previewUrl(appId: string): Promise<string | null> {
    const row = await previewNaming(this.env.db, appId);
    if (!row) return null;
    const base = await getBaseDomain(this.env.db, this.env.config.baseDomain);
    return base ? `https://pr-${row.number}-${row.name}.${base}` : null;
  }

  protected async secretValues(appId: string): Promise<string[]> {
    const rows = await secretEnvRows(this.env.db, appId);
    const out: string[] = [];
    for (const r of rows) {
      try {
        out.push(this.env.sealer.open(r.sealed, envBinding(appId, r.key)));
      } catch {
        // Unreadable (no master key): resolveEnv fails the deployment with the reason.
      }
    }
    return out;
  }

  /** Fails deployments active for longer than the timeout (a wedged engine call, a lost worker). */
  async reap(): Promise<number> {
    const limit = this.env.now() - this.opts.timeoutMs;
    let n = 0;
    for (const d of await listActive(this.env.db)) {
      const since = Date.parse(d.started_at ?? d.created_at);
      if (since > limit) continue;
      const mine = this.running.get(d.id);
      const text = `timed out after ${Math.round(this.opts.timeoutMs / 1000)} s (SVC_DEPLOY_TIMEOUT)`;
      if (mine && mine.reapedAt === undefined) {
        mine.reapedAt = this.env.now();
        mine.controller.abort(new StopReason('timeout', text));
      } else if (mine) {
        // Aborted, yet still running: its worker waits on an engine call that does not answer.
        // The failure is recorded now; the worker cleans up when the call returns (or recover()).
        if (this.env.now() - mine.reapedAt! < this.opts.reapGraceMs) continue;
        const app = await getApp(this.env.db, d.app_id, { includePreview: true }).catch(() => null);
        const error = `${text}; the engine did not answer, so what it made is removed when the engine answers again`;
        const done = await this.finish(d.id, d.app_id, 'failed', { error }, app);
        if (!done) continue;
        if (app) {
          this.pendingCleanup.set(d.id, app.name);
          const log = await this.openLog(d.id);
          log.write(`failed: ${error}`, 'error');
          await log.flush();
          this.notify('deploy_failed', done, app, await this.previewUrl(app.id).catch(() => null));
        }
      } else if (d.status !== 'queued' || d.waiting) {
        const app = await getApp(this.env.db, d.app_id, { includePreview: true }).catch(() => null);
        await this.finish(d.id, d.app_id, 'failed', { error: text }, app);
        if (app) {
          try {
            await removeDeploymentContainers(this.env.engine, app.name, d.id);
            await removeDeploymentImages(this.env.engine, app.name, d.id);
          } catch {
            this.pendingCleanup.set(d.id, app.name);
          }
        }
      } else continue;
      n++;
    }
    return n;
  }
}

function describe(e: unknown): string {
  if (e instanceof GitError) return `git: ${e.message}`;
  if (e instanceof EngineUnavailableError) return e.message;
  if (e instanceof HttpError) return e.message;
  if (e instanceof Error) {
    const m = e.message || e.name;
    // dockerode puts the engine's JSON answer in the message: keep its human part.
    const json = /\{"message":"(.*)"\}/.exec(m);
    return json ? json[1]! : m;
  }
  return String(e);
}

/** The status module (and the engine client) load with the first deployment, not at boot. */
async function refreshStatus(...args: Parameters<typeof import('../apps/status.js').refreshAppStatus>) {
  const { refreshAppStatus } = await import('../apps/status.js');
  return refreshAppStatus(...args);
}
