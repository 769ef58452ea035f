// The deployment service: a bounded queue and a worker pool (state is the point, hence a class).
// Different apps deploy in parallel up to the instance's concurrency; one app never does (the
// database allows one non-terminal deployment per app, plus at most one push waiting behind it).
import { join } from 'node:path';
import type { Env } from '../env.js';
import type { App } from '../apps/model.js';
import { getApp, setAppStatus } from '../apps/store.js';
import { envBinding } from '../apps/env.js';
import { HttpError, badRequest, conflict } from '../http/errors.js';
import { checkRef } from '../git/validate.js';
import { GitError } from '../git/clone.js';
import { EngineUnavailableError } from '../docker/engine.js';
import { removeDeploymentContainers } from '../docker/containers.js';
import { nowIso } from '../db/index.js';
import { DeployLog, masker } from './log.js';
import { isTerminal, type Deployment, type DeployStatus, type Trigger } from './model.js';
import {
  getDeployment, getDeploymentRow, insertCoalesced, insertDeployment, listActive, readConcurrency, readSpec, transition, writeConcurrency,
  MAX_CONCURRENCY, MIN_CONCURRENCY, type TransitionPatch,
} from './store.js';
import type { PipelineOptions } from './pipeline.js';
import { imagesPresent, pruneImages, removeDeploymentImages } from './images.js';
import { removeStrayClones } from './workdir.js';
import { defaultProbeMode, type ProbeMode } from './health.js';

export interface DeployServiceOptions extends PipelineOptions {
  /** Deployments waiting for a worker, beyond which enqueue answers 503. */
  maxQueue: number;
  keepImages: number;
  /** The reaper fails deployments active for longer than this. */
  timeoutMs: number;
  reaperEveryMs: number;
  /**
   * How long a timed-out deployment may take to stop after the reaper aborted it. Past this its
   * worker is wedged (an engine call that never answers): the reaper records the failure itself.
   */
  reapGraceMs: number;
}

export interface EnqueueInput {
  trigger: Trigger;
  /** Branch or tag; default: the app's branch. Validated like every ref. */
  ref?: string | null;
  /** Webhook delivery id (recorded, shown, audited). */
  deliveryId?: string | null;
  /** The commit the forge announced (informational: the ref's head at fetch time is deployed). */
  commit?: string | null;
}

export interface EnqueueResult {
  deployment: Deployment;
  /** Queued pushes this one replaced (push/tag only); each is now `canceled`. */
  superseded: Deployment[];
}

/** Why a running deployment's signal was aborted. */
export class StopReason extends Error {
  constructor(readonly kind: 'cancel' | 'shutdown' | 'timeout', message: string) {
    super(message);
    this.name = 'StopReason';
  }
}

interface Active {
  appId: string;
  controller: AbortController;
  done: Promise<void>;
  /** When the reaper aborted it for its timeout. */
  reapedAt?: number;
}

export class DeployService {
  readonly opts: DeployServiceOptions;
  private readonly queue: { id: string; appId: string }[] = [];
  private readonly running = new Map<string, Active>();
  private concurrency = 1;
  private started = false;
  private stopping = false;
  private reaper: NodeJS.Timeout | undefined;
  /**
   * Work the engine was not there for: deployments whose containers and images are still to be
   * removed (by id, with the app's name), and apps whose status is still to be settled. Retried
   * by recover() when the engine answers again.
   */
  private readonly pendingCleanup = new Map<string, string>();
  private readonly unsettled = new Map<string, App>();

  constructor(private readonly env: Env, opts: Partial<DeployServiceOptions> = {}) {
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
  }

  /**
   * Boot: deployments a dead process left non-terminal become `interrupted` (their half-made
   * containers and clones removed, the previous version untouched); queued ones that never
   * started are queued again. Then the workers and the reaper start.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.concurrency = await readConcurrency(this.env.db);
    await removeStrayClones(this.opts.workRoot).catch(() => 0);
    for (const d of await listActive(this.env.db)) {
      if (d.status === 'queued' && !d.waiting) {
        this.queue.push({ id: d.id, appId: d.app_id });
        continue;
      }
      if (d.status === 'queued') continue;
      await this.finish(d.id, d.app_id, 'interrupted', { error: 'the control plane stopped while this deployment was running' }, null);
      const app = await getApp(this.env.db, d.app_id).catch(() => null);
      if (app) {
        try {
          const removed = await removeDeploymentContainers(this.env.engine, app.name, d.id);
          await removeDeploymentImages(this.env.engine, app.name, d.id);
          const log = await this.openLog(d.id);
          log.write(`interrupted: the control plane stopped mid-deployment; removed ${removed.length} half-created container(s); the previous version was left as it was`);
          await log.flush();
          await this.settleAppStatus(app);
        } catch (e) {
          this.env.log.warn({ err: String(e), deployment: d.id }, 'cleanup of an interrupted deployment failed');
        }
      }
    }
    this.reaper = setInterval(() => void this.reap().catch((err) => this.env.log.warn({ err: String(err) }, 'deployment reaper failed')), this.opts.reaperEveryMs);
    this.reaper.unref();
    this.pump();
  }

  /** Graceful shutdown: running deployments are stopped, cleaned up and marked `interrupted`. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.reaper) clearInterval(this.reaper);
    for (const a of this.running.values()) a.controller.abort(new StopReason('shutdown', 'the control plane is shutting down'));
    await Promise.race([Promise.all([...this.running.values()].map((a) => a.done)), new Promise((r) => setTimeout(r, 20_000).unref())]);
  }

  getConcurrency(): number {
    return this.concurrency;
  }

  async setConcurrency(n: number): Promise<number> {
    if (!Number.isInteger(n) || n < MIN_CONCURRENCY || n > MAX_CONCURRENCY) throw badRequest(`concurrency must be a whole number from ${MIN_CONCURRENCY} to ${MAX_CONCURRENCY}`, [{ field: 'concurrency', message: 'out of range' }]);
    await writeConcurrency(this.env.db, n);
    this.concurrency = n;
    this.pump();
    return n;
  }

  /** Ids waiting for a worker, oldest first (for tests and the dashboard). */
  queued(): string[] {
    return this.queue.map((q) => q.id);
  }

  /**
   * Queues a deployment of the app. Manual: 409 when one is already active. Push/tag (webhooks):
   * never 409 for an active one; coalesces instead (see insertCoalesced). 503 when the queue is full.
   */
  async enqueue(app: App, input: EnqueueInput): Promise<EnqueueResult> {
    let ref: string | null = input.ref ?? null;
    if (app.source.type === 'git') ref ??= app.source.branch;
    else if (ref !== null) throw badRequest('An image app has no ref to deploy', [{ field: 'ref', message: 'not for image apps' }]);
    if (ref !== null) {
      const v = checkRef(ref);
      if (!v.ok) throw badRequest(`Invalid ref: ${v.reason}`, [{ field: 'ref', message: v.reason }]);
    }
    if (input.commit != null && !/^[0-9a-f]{7,64}$/.test(input.commit)) throw badRequest('commit must be a hexadecimal SHA', [{ field: 'commit', message: 'not a SHA' }]);
    if (input.trigger === 'rollback') throw badRequest('Use rollback() for rollbacks');
    this.assertRoom();
    const base = { appId: app.id, trigger: input.trigger, ref, deliveryId: input.deliveryId ?? null, commitWanted: input.commit ?? null };
    let result: EnqueueResult;
    if (input.trigger === 'push' || input.trigger === 'tag') {
      result = await insertCoalesced(this.env.db, base, this.env.now());
      for (const s of result.superseded) {
        const log = await this.openLog(s.id);
        log.write(`skipped: superseded by deployment ${result.deployment.id} (a newer push of ${ref}); intermediate pushes are not deployed`);
        await log.flush();
        this.dropFromQueue(s.id);
        this.publishStatus(s, app);
      }
      if (result.superseded.length || result.deployment.waiting) {
        const log = await this.openLog(result.deployment.id);
        if (result.superseded.length) log.write(`coalesced: replaces ${result.superseded.map((s) => s.id).join(', ')}, which had not started`);
        if (result.deployment.waiting) log.write('queued behind the deployment running now; starts when it ends');
        await log.flush();
      }
    } else {
      result = { deployment: await insertDeployment(this.env.db, base, this.env.now()), superseded: [] };
    }
    this.publishStatus(result.deployment, app);
    if (!result.deployment.waiting) this.admit(result.deployment.id, app.id);
    return result;
  }

  /** A `rollback` deployment that reuses the kept images of `targetId` (a succeeded deployment). */
  async rollback(app: App, targetId: string): Promise<Deployment> {
    const target = await getDeployment(this.env.db, app.id, targetId);
    if (target.status !== 'succeeded') throw conflict(`Deployment ${target.id} did not succeed (${target.status}); only a succeeded deployment can be rolled back to`);
    const spec = await readSpec(this.env.db, target.id);
    if (!target.images || !Object.keys(target.images).length || !spec) throw conflict(`Deployment ${target.id} has no kept images to roll back to`);
    const missing = await imagesPresent(this.env.engine, target.images);
    if (missing.length) throw conflict(`The images of deployment ${target.id} are no longer kept (${missing.join(', ')}); keep more with SVC_KEEP_IMAGES`);
    this.assertRoom();
    const d = await insertDeployment(this.env.db, {
      appId: app.id, trigger: 'rollback', ref: target.ref, rollbackOf: target.id, images: target.images, spec,
      commit: target.commit, commitSubject: target.commit_subject,
    }, this.env.now());
    this.publishStatus(d, app);
    this.admit(d.id, app.id);
    return d;
  }

  /**
   * Cancels a queued deployment at once, or aborts a running one's current step (clone, build,
   * start, gate) and waits (bounded) for its cleanup. The running version is never touched.
   */
  async cancel(app: App, id: string): Promise<Deployment> {
    const d = await getDeployment(this.env.db, app.id, id);
    if (isTerminal(d.status)) throw conflict(`Deployment ${d.id} has already finished (${d.status})`);
    const active = this.running.get(id);
    if (active) {
      active.controller.abort(new StopReason('cancel', 'canceled by an operator'));
      await Promise.race([active.done, new Promise((r) => setTimeout(r, 60_000).unref())]);
      return getDeployment(this.env.db, app.id, id);
    }
    const r = await this.finish(id, app.id, 'canceled', { error: 'canceled by an operator before it started' }, app, ['queued']);
    if (!r) {
      // It started between our read and our write: abort it like a running one.
      const again = this.running.get(id);
      if (again) return this.cancel(app, id);
      return getDeployment(this.env.db, app.id, id);
    }
    this.dropFromQueue(id);
    const log = await this.openLog(id);
    log.write('canceled before it started');
    await log.flush();
    return r;
  }

  /** Whether this process runs the deployment now. */
  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  private assertRoom(): void {
    if (this.stopping) throw new HttpError('service_unavailable', 'The control plane is shutting down');
    if (this.queue.length >= this.opts.maxQueue) throw new HttpError('service_unavailable', `The deployment queue is full (${this.opts.maxQueue} waiting); try again later`);
  }

  private admit(id: string, appId: string): void {
    if (!this.queue.some((q) => q.id === id)) this.queue.push({ id, appId });
    this.pump();
  }

  private dropFromQueue(id: string): void {
    const i = this.queue.findIndex((q) => q.id === id);
    if (i >= 0) this.queue.splice(i, 1);
  }

  /** Starts queued deployments, oldest first, skipping apps that have one running. */
  private pump(): void {
    if (!this.started || this.stopping) return;
    const busy = new Set([...this.running.values()].map((a) => a.appId));
    for (let i = 0; i < this.queue.length && this.running.size < this.concurrency; ) {
      const { id, appId } = this.queue[i]!;
      if (busy.has(appId)) {
        i++;
        continue;
      }
      // Claimed synchronously so two pumps never start the same one.
      busy.add(appId);
      this.queue.splice(i, 1);
      const slot: Active = { appId, controller: new AbortController(), done: Promise.resolve() };
      this.running.set(id, slot);
      slot.done = this.execute(id, slot).finally(() => {
        this.running.delete(id);
        this.pump();
      });
    }
  }

  private async openLog(id: string): Promise<DeployLog> {
    const r = await this.env.db.selectFrom('deployment_logs').select((eb) => eb.fn.max('seq').as('m')).where('deployment_id', '=', id).executeTakeFirst();
    return new DeployLog(this.env.db, this.env.bus, id, this.env.now, Number(r?.m ?? 0));
  }

  private async execute(id: string, slot: Active): Promise<void> {
    const row = await getDeploymentRow(this.env.db, id);
    if (!row || row.status !== 'queued' || row.waiting === 1) return;
    let app: App;
    try {
      app = await getApp(this.env.db, row.app_id);
    } catch {
      await this.finish(id, row.app_id, 'failed', { error: 'the app was deleted' }, null);
      return;
    }
    const log = await this.openLog(id);
    const signal = slot.controller.signal;
    let deployment = (await getDeployment(this.env.db, app.id, id));
    const setStatus = async (status: DeployStatus, patch: TransitionPatch = {}) => {
      signal.throwIfAborted();
      const r = await transition(this.env.db, id, status, patch, { now: this.env.now() });
      if (!r) throw new StopReason('cancel', 'the deployment was finished elsewhere');
      deployment = r.deployment;
      this.publishStatus(r.deployment, app);
    };
    try {
      log.mask = masker(await this.secretValues(app.id));
      await setAppStatus(this.env.db, app.id, 'deploying', this.env.now());
      this.env.bus.publish('apps', { type: 'status', app_id: app.id, app: app.name, status: 'deploying' });
      log.write(`deployment ${id} (${deployment.trigger}${deployment.delivery_id ? `, delivery ${deployment.delivery_id}` : ''}) of app ${app.name} started`);
      const spec = deployment.trigger === 'rollback' ? await readSpec(this.env.db, id) : null;
      // The pipeline (compose, build, blue/green) loads with the first deployment, not at boot.
      const { runPipeline } = await import('./pipeline.js');
      const result = await runPipeline({ env: this.env, app, deployment, spec, log, signal, setStatus, opts: this.opts });
      signal.throwIfAborted();
      log.write(`succeeded: the new version serves${result.replaced.length ? `; retiring ${result.replaced.join(', ')}` : ''}`);
      await log.flush();
      const done = await this.finish(id, app.id, 'succeeded', {}, app);
      if (done) this.notify('deploy_succeeded', done, app);
      // Still within this app's slot: the next deployment of the app starts after the old
      // containers are gone.
      await result.retire();
      await log.flush();
      await refreshStatus(this.env, app).catch(() => {});
      await pruneImages(this.env.engine, app.name, this.opts.keepImages, (l) => this.env.log.info({ app: app.name }, l)).catch((e) => this.env.log.warn({ err: String(e) }, 'image prune failed'));
    } catch (e) {
      const reason = signal.aborted ? signal.reason : e instanceof StopReason ? e : null;
      let status: DeployStatus = 'failed';
      let message: string;
      if (reason instanceof StopReason) {
        status = reason.kind === 'cancel' ? 'canceled' : reason.kind === 'shutdown' ? 'interrupted' : 'failed';
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
      if (done && status === 'failed') this.notify('deploy_failed', done, app);
    }
  }

  /** Moves to a terminal status, publishes it, and admits the push that was waiting behind it. */
  private async finish(id: string, appId: string, status: DeployStatus, patch: TransitionPatch, app: App | null, from?: readonly string[]): Promise<Deployment | null> {
    const r = await transition(this.env.db, id, status, patch, { from, now: this.env.now() });
    if (!r) return null;
    this.publishStatus(r.deployment, app ?? { id: appId, name: '' } as App);
    if (r.promoted) {
      this.publishStatus(r.promoted, app ?? { id: appId, name: '' } as App);
      if (!this.stopping) this.admit(r.promoted.id, appId);
    }
    return r.deployment;
  }

  private async settleAppStatus(app: App): Promise<void> {
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
        log.write(`the engine answers again: removed what this deployment left${removed.length ? ` (${removed.join(', ')})` : ''}`);
        await log.flush();
      } catch (e) {
        this.env.log.warn({ err: String(e), deployment: id }, 'cleanup after the engine came back failed; retried on its next return');
      }
    }
    for (const app of [...this.unsettled.values()]) {
      if ([...this.running.values()].some((a) => a.appId === app.id)) continue;
      await this.settleAppStatus(app);
    }
  }

  private publishStatus(d: Deployment, app: Pick<App, 'id' | 'name'>): void {
    this.env.bus.publish('deployments', { type: 'status', ...d, app: app.name || undefined });
  }

  /**
   * For notification channels: topic `deployments`, data.type deploy_succeeded | deploy_failed,
   * with what a message needs and no secret (the error is already masked).
   */
  private notify(type: 'deploy_succeeded' | 'deploy_failed', d: Deployment, app: App): void {
    this.env.bus.publish('deployments', {
      type, deployment_id: d.id, app_id: app.id, app: app.name, trigger: d.trigger, ref: d.ref, commit: d.commit,
      commit_subject: d.commit_subject, image: d.image, error: d.error, delivery_id: d.delivery_id, finished_at: d.finished_at,
    });
  }

  private async secretValues(appId: string): Promise<string[]> {
    const rows = await this.env.db.selectFrom('app_env').select(['key', 'sealed']).where('app_id', '=', appId).where('secret', '=', 1).execute();
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
        const app = await getApp(this.env.db, d.app_id).catch(() => null);
        const error = `${text}; the engine did not answer, so what it made is removed when the engine answers again`;
        const done = await this.finish(d.id, d.app_id, 'failed', { error }, app);
        if (!done) continue;
        if (app) {
          this.pendingCleanup.set(d.id, app.name);
          const log = await this.openLog(d.id);
          log.write(`failed: ${error}`, 'error');
          await log.flush();
          this.notify('deploy_failed', done, app);
        }
      } else if (d.status !== 'queued' || d.waiting) {
        const app = await getApp(this.env.db, d.app_id).catch(() => null);
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

export { nowIso };

/** The status module (and the engine client) load with the first deployment, not at boot. */
async function refreshStatus(...args: Parameters<typeof import('../apps/status.js').refreshAppStatus>) {
  const { refreshAppStatus } = await import('../apps/status.js');
  return refreshAppStatus(...args);
}
