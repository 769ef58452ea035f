// The deployment service: a bounded queue and a worker pool (state is the point, hence a class).
// Different apps deploy in parallel up to the instance's concurrency; one app never does (the
// database allows one non-terminal deployment per app, plus at most one push waiting behind it).
// Running a deployment (pipeline, terminal status, cleanup, reaper) is DeployRunner (runner.ts).
import type { App } from '../apps/model.js';
import { HttpError, badRequest, conflict } from '../http/errors.js';
import { checkCommit, checkRef } from '../git/validate.js';
import { removeDeploymentContainers } from '../docker/containers.js';
import { getApp } from '../apps/store.js';
import { previewScope } from '../apps/events.js';
import { nowIso } from '../db/index.js';
import { COALESCED_TRIGGERS, isTerminal, type Deployment } from '../apps/deployment.js';
import {
  getDeployment,
  insertCoalesced,
  insertDeployment,
  listActive,
  readConcurrency,
  readSpec,
  writeConcurrency,
  MAX_CONCURRENCY,
  MIN_CONCURRENCY,
} from './store.js';
import { imagesPresent, removeDeploymentImages } from './images.js';
import { isBuiltImage } from '../images/rollback.js';
import { removeStrayClones } from './workdir.js';
import { DeployRunner, StopReason, type Active } from './runner.js';
import type { Deployments, EnqueueInput, EnqueueResult } from './types.js';

export { StopReason };
export type { DeployServiceOptions, EnqueueInput, EnqueueResult } from './types.js';

const builtImages = (images: Record<string, string>) =>
  Object.fromEntries(Object.entries(images).filter(([, ref]) => isBuiltImage(ref)));

export class DeployService extends DeployRunner implements Deployments {
  private readonly queue: { id: string; appId: string }[] = [];
  private concurrency = 1;
  private started = false;
  private reaper: NodeJS.Timeout | undefined;

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
      await this.finish(
        d.id,
        d.app_id,
        'interrupted',
        { error: 'the control plane stopped while this deployment was running' },
        null,
      );
      const app = await getApp(this.env.db, d.app_id, { includePreview: true }).catch(() => null);
      if (app) {
        try {
          const removed = await removeDeploymentContainers(this.env.engine, app.name, d.id);
          await removeDeploymentImages(this.env.engine, app.name, d.id);
          const log = await this.openLog(d.id);
          log.write(
            `interrupted: the control plane stopped mid-deployment; removed ${removed.length} half-created container(s); the previous version was left as it was`,
          );
          await log.flush();
          await this.settleAppStatus(app);
        } catch (e) {
          this.env.log.warn(
            { err: String(e), deployment: d.id },
            'cleanup of an interrupted deployment failed',
          );
        }
      }
    }
    this.reaper = setInterval(
      () =>
        void this.reap().catch((err) => this.env.log.warn({ err: String(err) }, 'deployment reaper failed')),
      this.opts.reaperEveryMs,
    );
    this.reaper.unref();
    this.pump();
  }

  /** Graceful shutdown: running deployments are stopped, cleaned up and marked `interrupted`. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.reaper) clearInterval(this.reaper);
    for (const a of this.running.values())
      a.controller.abort(new StopReason('shutdown', 'the control plane is shutting down'));
    await Promise.race([
      Promise.all([...this.running.values()].map((a) => a.done)),
      new Promise((r) => setTimeout(r, 20_000).unref()),
    ]);
  }

  getConcurrency(): number {
    return this.concurrency;
  }

  async setConcurrency(n: number): Promise<number> {
    if (!Number.isInteger(n) || n < MIN_CONCURRENCY || n > MAX_CONCURRENCY)
      throw badRequest(`concurrency must be a whole number from ${MIN_CONCURRENCY} to ${MAX_CONCURRENCY}`, [
        { field: 'concurrency', message: 'out of range' },
      ]);
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
    else if (ref !== null)
      throw badRequest('An image app has no ref to deploy', [
        { field: 'ref', message: 'not for image apps' },
      ]);
    if (ref !== null) {
      const v = checkRef(ref);
      if (!v.ok) throw badRequest(`Invalid ref: ${v.reason}`, [{ field: 'ref', message: v.reason }]);
    }
    if (input.commit != null && !/^[0-9a-f]{7,64}$/.test(input.commit))
      throw badRequest('commit must be a hexadecimal SHA', [{ field: 'commit', message: 'not a SHA' }]);
    let pin: string | null = null;
    if (input.pin != null) {
      if (app.source.type !== 'git')
        throw badRequest(`Only a git app deploys a commit (this app's source is ${app.source.type})`, [
          { field: 'commit', message: 'git apps only' },
        ]);
      const v = checkCommit(input.pin);
      if (!v.ok) throw badRequest(`Invalid commit: ${v.reason}`, [{ field: 'commit', message: v.reason }]);
      pin = input.pin.toLowerCase();
    }
    if (input.trigger === 'rollback') throw badRequest('Use rollback() for rollbacks');
    this.assertRoom();
    const base = {
      appId: app.id,
      trigger: input.trigger,
      ref,
      deliveryId: input.deliveryId ?? null,
      commitWanted: input.commit ?? null,
      commitPin: pin,
      pull: input.pull ?? false,
      createdBy: input.createdBy ?? null,
    };
    const scope = await previewScope(this.env.db, app.id);
    let result: EnqueueResult;
    if (COALESCED_TRIGGERS.includes(input.trigger)) {
      result = await insertCoalesced(this.env.db, base, this.env.now());
      for (const s of result.superseded) {
        const log = await this.openLog(s.id);
        log.write(
          `skipped: superseded by deployment ${result.deployment.id} (a newer push of ${ref}); intermediate pushes are not deployed`,
        );
        await log.flush();
        this.dropFromQueue(s.id);
        this.publishStatus(s, app, scope);
      }
      if (result.superseded.length || result.deployment.waiting) {
        const log = await this.openLog(result.deployment.id);
        if (result.superseded.length)
          log.write(
            `coalesced: replaces ${result.superseded.map((s) => s.id).join(', ')}, which had not started`,
          );
        if (result.deployment.waiting)
          log.write('queued behind the deployment running now; starts when it ends');
        await log.flush();
      }
    } else {
      result = { deployment: await insertDeployment(this.env.db, base, this.env.now()), superseded: [] };
    }
    this.publishStatus(result.deployment, app, scope);
    if (!result.deployment.waiting) this.admit(result.deployment.id, app.id);
    return result;
  }

  /** A `rollback` deployment that reuses the kept images of `targetId` (a succeeded deployment). */
  async rollback(app: App, targetId: string, createdBy: string | null = null): Promise<Deployment> {
    const target = await getDeployment(this.env.db, app.id, targetId);
    if (target.status !== 'succeeded')
      throw conflict(
        `Deployment ${target.id} did not succeed (${target.status}); only a succeeded deployment can be rolled back to`,
      );
    const spec = await readSpec(this.env.db, target.id);
    if (!target.images || !Object.keys(target.images).length || !spec)
      throw conflict(`Deployment ${target.id} has no kept images to roll back to`);
    // Built images exist only here; a pulled one the engine lost is pulled again by its digest.
    const missing = await imagesPresent(this.env.engine, builtImages(target.images));
    if (missing.length)
      throw conflict(
        `The images of deployment ${target.id} are no longer kept (${missing.join(', ')}); keep more with SVC_KEEP_IMAGES`,
      );
    this.assertRoom();
    const d = await insertDeployment(
      this.env.db,
      {
        appId: app.id,
        trigger: 'rollback',
        ref: target.ref,
        rollbackOf: target.id,
        images: target.images,
        imageDigests: target.image_digests,
        spec,
        commit: target.commit,
        commitSubject: target.commit_subject,
        createdBy,
      },
      this.env.now(),
    );
    this.publishStatus(d, app, await previewScope(this.env.db, app.id));
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
    const r = await this.finish(
      id,
      app.id,
      'canceled',
      { error: 'canceled by an operator before it started' },
      app,
      ['queued'],
    );
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

  private assertRoom(): void {
    if (this.stopping) throw new HttpError('service_unavailable', 'The control plane is shutting down');
    if (this.queue.length >= this.opts.maxQueue)
      throw new HttpError(
        'service_unavailable',
        `The deployment queue is full (${this.opts.maxQueue} waiting); try again later`,
      );
  }

  protected admit(id: string, appId: string): void {
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
    for (let i = 0; i < this.queue.length && this.running.size < this.concurrency;) {
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
}

export { nowIso };
