// Scheduled runs made ahead of their due time (on one host): a few seconds before it, each job due
// next gets its one-off container created (not started) from the live service, under the id its
// run will have. At the due time only the claim and the start are left, so the start lag is the
// engine's. What is not taken (the claim went elsewhere, the overlap policy skipped it, the job or
// the deployment changed) is removed; one a dead process left is an orphan the next start removes.
import type { Services } from '../http/handler.js';
import { newId } from '../crypto/random.js';
import { Semaphore } from '../util/semaphore.js';
import { toJob } from './model.js';
import { nextDue } from './schedule.js';
import { liveTarget, type Target } from './target.js';
import { currentDeployment, type ScheduledJob } from './store.js';

type Env = Pick<Services, 'db' | 'engine' | 'config' | 'log' | 'runs'>;

export interface Prepared {
  jobId: string;
  due: number;
  /** The job as it was (its `updated_at`): a change since discards it. */
  version: string;
  runId: string;
  target: Target;
  engineId: string;
}

/** Creates at once, at most: the engine is shared with everything else. */
const AT_ONCE = 8;

export class Preparer {
  private readonly ready = new Map<string, Prepared>();
  private readonly gate = new Semaphore(AT_ONCE);

  constructor(private readonly env: Env) {}

  /** Makes the one-off of each job due within `leadMs` after `now` that has none yet. */
  async prepare(jobs: ScheduledJob[], now: number, leadMs: number): Promise<void> {
    const live = new Set(jobs.map((j) => j.id));
    for (const p of [...this.ready.values()]) if (!live.has(p.jobId) || p.due < now) await this.discard(p);
    await Promise.all(
      jobs.map(async (job) => {
        const due = nextDue(job.schedule, job.timezone, Date.parse(job.last_scheduled_at ?? job.created_at));
        if (due === null || due - now > leadMs || due <= now) return;
        const have = this.ready.get(job.id);
        if (have?.due === due && have.version === job.updated_at) return;
        if (have) await this.discard(have);
        await this.gate
          .run(() => this.make(job, due))
          .catch(() => {
            // Nothing to run yet, or the engine is busy: the due time goes the usual way.
          });
      }),
    );
  }

  private async make(job: ScheduledJob, due: number): Promise<void> {
    const j = toJob(job);
    const target = await liveTarget(this.env, { id: job.app_id, name: job.app_name }, j.service);
    await this.env.runs.ensureSwept();
    const runId = newId();
    this.env.runs.reserved.add(runId);
    try {
      const engineId = await this.env.runs.place.create(target, { id: runId, command: j.command });
      this.ready.set(job.id, { jobId: job.id, due, version: job.updated_at, runId, target, engineId });
    } catch (e) {
      this.env.runs.reserved.delete(runId);
      throw e;
    }
  }

  /**
   * The one-off made for this job's due time, now the caller's, when the job and the app's current
   * deployment are still what it was made from; otherwise it is removed and null answered.
   */
  async take(job: ScheduledJob, due: number): Promise<Prepared | null> {
    const p = this.ready.get(job.id);
    if (!p) return null;
    this.ready.delete(job.id);
    const dep = await currentDeployment(this.env.db, job.app_id).catch(() => null);
    const deployment = p.target.kind === 'host' ? p.target.template.deploymentId : p.target.deploymentId;
    if (p.due !== due || p.version !== job.updated_at || dep?.id !== deployment) {
      await this.drop(p);
      return null;
    }
    this.env.runs.reserved.delete(p.runId);
    return p;
  }

  /** Removes a one-off made ahead that no run will use. */
  async drop(p: Prepared): Promise<void> {
    this.env.runs.reserved.delete(p.runId);
    await this.env.runs.place
      .remove(p.engineId)
      .catch((e) =>
        this.env.log.warn({ run: p.runId, err: String(e) }, 'could not remove a one-off made ahead'),
      );
  }

  private async discard(p: Prepared): Promise<void> {
    this.ready.delete(p.jobId);
    await this.drop(p);
  }

  async clear(): Promise<void> {
    for (const p of [...this.ready.values()]) await this.discard(p);
  }
}
