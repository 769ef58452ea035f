// Deployment rows. Exclusion is the database's job: the partial unique index
// deployments_one_active refuses a second non-terminal deployment of an app, so two racing
// requests cannot both pass a check and insert.
import type { Db } from '../db/index.js';
import { isUniqueViolation, lockedOn, nowIso } from '../db/index.js';
import type { Insertable } from 'kysely';
import { sql } from '../db/kysely.js';
import type { DeploymentLogTable, DeploymentTable } from '../db/schema.js';
import { newId } from '../crypto/random.js';
import { HttpError, notFound } from '../http/errors.js';
import {
  type DeploymentConfig,
  ACTIVE,
  COALESCED_TRIGGERS,
  isTerminal,
  toDeployment,
  type DeploySpec,
  type Deployment,
  type DeployStatus,
  type Trigger,
} from '../apps/deployment.js';

export { isUniqueViolation };

export interface NewDeployment {
  appId: string;
  trigger: Trigger;
  ref: string | null;
  deliveryId?: string | null;
  rollbackOf?: string | null;
  /** Rollbacks know their images (and spec) up front. */
  images?: Record<string, string> | null;
  spec?: DeploySpec | null;
  commit?: string | null;
  commitSubject?: string | null;
  commitWanted?: string | null;
  /** Deploy exactly this commit of `ref` (see lib/deploy/workdir.ts). */
  commitPin?: string | null;
  /** Pull every image again before deploying. */
  pull?: boolean;
  /** A rollback runs exactly the digests of the deployment it returns to. */
  imageDigests?: Record<string, string> | null;
  /** The username of the operator who asked for it. */
  createdBy?: string | null;
}

function row(input: NewDeployment, now: number, waiting: boolean): DeploymentTable {
  const at = nowIso(now);
  return {
    id: newId(now),
    app_id: input.appId,
    status: 'queued',
    trigger: input.trigger,
    ref: input.ref,
    commit_sha: input.commit ?? null,
    commit_subject: input.commitSubject ?? null,
    images: input.images ? JSON.stringify(input.images) : null,
    error: null,
    rollback_of: input.rollbackOf ?? null,
    delivery_id: input.deliveryId ?? null,
    created_at: at,
    started_at: null,
    finished_at: null,
    updated_at: at,
    waiting: waiting ? 1 : 0,
    spec: input.spec ? JSON.stringify(input.spec) : null,
    commit_wanted: input.commitWanted ?? null,
    commit_pin: input.commitPin ?? null,
    image_digests: input.imageDigests ? JSON.stringify(input.imageDigests) : null,
    pull: input.pull ? 1 : 0,
    pulled: null,
    created_by: input.createdBy ?? null,
  };
}

const CONFLICT = 'A deployment of this app is already queued or running: wait for it or cancel it';

/** Inserts a queued deployment; 409 when the app already has an active one. */
export async function insertDeployment(db: Db, input: NewDeployment, now = Date.now()): Promise<Deployment> {
  const r = row(input, now, false);
  try {
    await db.insertInto('deployments').values(r).execute();
    await db
      .insertInto('deployment_events')
      .values({ deployment_id: r.id, status: 'queued', at: r.created_at })
      .execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw new HttpError('conflict', CONFLICT);
    throw e;
  }
  return toDeployment(r);
}

export interface CoalesceResult {
  deployment: Deployment;
  /** Deployments this one replaced (queued pushes that never started; now canceled). */
  superseded: Deployment[];
}

/**
 * A push or tag delivery. With no active deployment it is queued normally. When the active one
 * is a push that has not started, it is replaced. When one is running (or a manual one is
 * queued), the push waits behind it, replacing any push already waiting: one runs, the newest
 * follows, the ones in between are skipped. All in one transaction, under the same indexes.
 */
export async function insertCoalesced(
  db: Db,
  input: NewDeployment,
  now = Date.now(),
): Promise<CoalesceResult> {
  const at = nowIso(now);
  return db.transaction().execute(async (tx) => {
    const active = await tx
      .selectFrom('deployments')
      .selectAll()
      .where('app_id', '=', input.appId)
      .where('status', 'in', [...ACTIVE])
      .$call(lockedOn(tx))
      .execute();
    const superseded: DeploymentTable[] = [];
    const current = active.find((d) => d.waiting === 0);
    const replaceable = (d: DeploymentTable) =>
      d.status === 'queued' && COALESCED_TRIGGERS.includes(d.trigger as Trigger);
    let waiting = false;
    if (current && replaceable(current)) superseded.push(current);
    else if (current) waiting = true;
    for (const d of active) if (d.waiting === 1) superseded.push(d);
    const r = row(input, now, waiting);
    for (const d of superseded) {
      const error = `superseded by deployment ${r.id} (a newer push)`;
      const u = await tx
        .updateTable('deployments')
        .set({ status: 'canceled', error, finished_at: at, updated_at: at, waiting: 0 })
        .where('id', '=', d.id)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (Number(u.numUpdatedRows) !== 1) throw new HttpError('conflict', CONFLICT);
      await tx
        .insertInto('deployment_events')
        .values({ deployment_id: d.id, status: 'canceled', at })
        .execute();
      Object.assign(d, { status: 'canceled', error, finished_at: at, updated_at: at, waiting: 0 });
    }
    try {
      await tx.insertInto('deployments').values(r).execute();
    } catch (e) {
      if (isUniqueViolation(e)) throw new HttpError('conflict', CONFLICT);
      throw e;
    }
    await tx.insertInto('deployment_events').values({ deployment_id: r.id, status: 'queued', at }).execute();
    return { deployment: toDeployment(r), superseded: superseded.map(toDeployment) };
  });
}

export interface TransitionPatch {
  error?: string | null;
  commit?: string | null;
  commitSubject?: string | null;
  images?: Record<string, string> | null;
  spec?: DeploySpec | null;
  imageDigests?: Record<string, string> | null;
  /** `<repository>@<digest>` of the images this deployment pulled. */
  pulled?: string[] | null;
  /** What the deployment took from the repository's svc.yaml. */
  config?: DeploymentConfig | null;
}

/**
 * Moves a deployment to `to` (only from one of `from` when given), persisting the time in the
 * row and in deployment_events. Returns null when the deployment was not in an expected state
 * (someone else finished it first). A terminal move promotes the push waiting behind it.
 */
export async function transition(
  db: Db,
  id: string,
  to: DeployStatus,
  patch: TransitionPatch = {},
  opts: { from?: readonly string[]; now?: number } = {},
): Promise<{ deployment: Deployment; promoted: Deployment | null } | null> {
  const at = nowIso(opts.now ?? Date.now());
  return db.transaction().execute(async (tx) => {
    const set: Partial<DeploymentTable> = { status: to, updated_at: at };
    if (patch.error !== undefined) set.error = patch.error;
    if (patch.commit !== undefined) set.commit_sha = patch.commit;
    if (patch.commitSubject !== undefined) set.commit_subject = patch.commitSubject;
    if (patch.images !== undefined) set.images = patch.images ? JSON.stringify(patch.images) : null;
    if (patch.spec !== undefined) set.spec = patch.spec ? JSON.stringify(patch.spec) : null;
    if (patch.imageDigests !== undefined)
      set.image_digests = patch.imageDigests ? JSON.stringify(patch.imageDigests) : null;
    if (patch.config !== undefined) set.config = patch.config ? JSON.stringify(patch.config) : null;
    if (patch.pulled !== undefined) set.pulled = patch.pulled?.length ? JSON.stringify(patch.pulled) : null;
    if (isTerminal(to)) {
      set.finished_at = at;
      set.waiting = 0;
    }
    let q = tx.updateTable('deployments').set(set).where('id', '=', id);
    q = opts.from ? q.where('status', 'in', [...opts.from]) : q.where('status', 'in', [...ACTIVE]);
    const r = await q.executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return null;
    // started_at is set once, the first time the deployment leaves the queue.
    if (!isTerminal(to) && to !== 'queued')
      await tx
        .updateTable('deployments')
        .set({ started_at: at })
        .where('id', '=', id)
        .where('started_at', 'is', null)
        .execute();
    await tx.insertInto('deployment_events').values({ deployment_id: id, status: to, at }).execute();
    const updated = await tx
      .selectFrom('deployments')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    let promoted: Deployment | null = null;
    if (isTerminal(to) && updated.waiting === 0) {
      const next = await tx
        .selectFrom('deployments')
        .selectAll()
        .where('app_id', '=', updated.app_id)
        .where('waiting', '=', 1)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (next) {
        await tx
          .updateTable('deployments')
          .set({ waiting: 0, updated_at: at })
          .where('id', '=', next.id)
          .execute();
        promoted = toDeployment({ ...next, waiting: 0, updated_at: at });
      }
    }
    return { deployment: toDeployment(updated), promoted };
  });
}

export async function getDeploymentRow(db: Db, id: string): Promise<DeploymentTable | undefined> {
  return db.selectFrom('deployments').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The deployment of that app, or 404 (an id of another app's deployment is not found here). */
export async function getDeployment(db: Db, appId: string, id: string): Promise<Deployment> {
  const r = await getDeploymentRow(db, id);
  if (!r || r.app_id !== appId) throw notFound('No such deployment');
  return toDeployment(r);
}

export async function listDeployments(
  db: Db,
  appId: string,
  opts: { cursor?: string; limit: number },
): Promise<{ items: Deployment[]; next_cursor?: string }> {
  let q = db.selectFrom('deployments').selectAll().where('app_id', '=', appId);
  // Ids are time-ordered, newest first: the cursor is the last id of the previous page.
  if (opts.cursor) q = q.where('id', '<', opts.cursor);
  const rows = await q
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const items = rows.slice(0, opts.limit).map(toDeployment);
  return rows.length > opts.limit ? { items, next_cursor: items.at(-1)!.id } : { items };
}

/** Non-terminal deployments of every app, oldest first. */
export async function listActive(db: Db): Promise<Deployment[]> {
  const rows = await db
    .selectFrom('deployments')
    .selectAll()
    .where('status', 'in', [...ACTIVE])
    .orderBy('id', 'asc')
    .execute();
  return rows.map(toDeployment);
}

export async function readLogs(
  db: Db,
  deploymentId: string,
  opts: { after?: number; limit?: number } = {},
): Promise<{ seq: number; at: string; stream: string; line: string }[]> {
  let q = db
    .selectFrom('deployment_logs')
    .select(['seq', 'at', 'stream', 'line'])
    .where('deployment_id', '=', deploymentId);
  if (opts.after !== undefined) q = q.where('seq', '>', opts.after);
  return q
    .orderBy('seq', 'asc')
    .limit(opts.limit ?? 100_000)
    .execute();
}

/** One page of log lines; `next_after` is set when more lines follow. */
export async function readLogPage(
  db: Db,
  deploymentId: string,
  opts: { after?: number; limit: number },
): Promise<{ items: { seq: number; at: string; stream: string; line: string }[]; next_after?: number }> {
  const rows = await readLogs(db, deploymentId, { after: opts.after, limit: opts.limit + 1 });
  const items = rows.slice(0, opts.limit);
  return rows.length > opts.limit ? { items, next_after: items.at(-1)!.seq } : { items };
}

export async function readSpec(db: Db, id: string): Promise<DeploySpec | null> {
  const r = await db.selectFrom('deployments').select('spec').where('id', '=', id).executeTakeFirst();
  return r?.spec ? (JSON.parse(r.spec) as DeploySpec) : null;
}

const CONCURRENCY_KEY = 'deploy_concurrency';
export const MIN_CONCURRENCY = 1;
export const MAX_CONCURRENCY = 8;

export async function readConcurrency(db: Db): Promise<number> {
  const r = await db
    .selectFrom('settings')
    .select('value')
    .where('key', '=', CONCURRENCY_KEY)
    .executeTakeFirst();
  const n = r ? Number(r.value) : 1;
  return Number.isInteger(n) && n >= MIN_CONCURRENCY && n <= MAX_CONCURRENCY ? n : 1;
}

export async function writeConcurrency(db: Db, n: number): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key: CONCURRENCY_KEY, value: String(n) })
    .onConflict((c) => c.column('key').doUpdateSet({ value: String(n) }))
    .execute();
}

/** Appends log lines, in batches of 200 rows per statement. */
export async function insertLogLines(db: Db, lines: Insertable<DeploymentLogTable>[]): Promise<void> {
  for (let i = 0; i < lines.length; i += 200)
    await db
      .insertInto('deployment_logs')
      .values(lines.slice(i, i + 200))
      .execute();
}

/** The last sequence number of a deployment's log (0: none yet). */
export async function lastLogSeq(db: Db, deploymentId: string): Promise<number> {
  const r = await db
    .selectFrom('deployment_logs')
    .select((eb) => eb.fn.max('seq').as('m'))
    .where('deployment_id', '=', deploymentId)
    .executeTakeFirst();
  return Number(r?.m ?? 0);
}

/** The preview an app is the own row of: its number and its app's name; undefined for any other app. */
export function previewNaming(db: Db, appId: string): Promise<{ number: number; name: string } | undefined> {
  return db
    .selectFrom('previews')
    .innerJoin('apps as parent', 'parent.id', 'previews.app_id')
    .select(['previews.number', 'parent.name'])
    .where('previews.target_app_id', '=', appId)
    .executeTakeFirst();
}

/** How many deployments are in each status. */
export function deploymentCounts(db: Db): Promise<Array<{ status: string; n: number }>> {
  return db
    .selectFrom('deployments')
    .select(['status', sql<number>`count(*)`.as('n')])
    .groupBy('status')
    .execute();
}

/** When each deployment that ended in one of `terminal` started and finished (both known). */
export function finishedTimes(db: Db, terminal: readonly string[]) {
  return db
    .selectFrom('deployments')
    .select(['started_at', 'finished_at'])
    .where('status', 'in', [...terminal])
    .where('started_at', 'is not', null)
    .where('finished_at', 'is not', null)
    .execute();
}

/** The app's deployment that succeeded last (by when it finished); undefined: none did. */
export function lastSucceeded(db: Db, appId: string) {
  return db
    .selectFrom('deployments')
    .selectAll()
    .where('app_id', '=', appId)
    .where('status', '=', 'succeeded')
    .orderBy('finished_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Whether any deployment of the app succeeded. */
export async function hasSucceeded(db: Db, appId: string): Promise<boolean> {
  return !!(await db
    .selectFrom('deployments')
    .select('id')
    .where('app_id', '=', appId)
    .where('status', '=', 'succeeded')
    .executeTakeFirst());
}
