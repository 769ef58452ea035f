import type { Db } from '../db/index.js';
import { isUniqueViolation, nowIso } from '../db/index.js';
import { sql } from '../db/kysely.js';
import { newId } from '../crypto/random.js';
import { HttpError, notFound } from '../http/errors.js';
import {
  DEFAULT_DRAIN_S,
  toApp,
  type App,
  type AppSource,
  type AppStatus,
  type BuildLimits,
} from './model.js';
import { toDeployment, type Deployment } from './deployment.js';

export async function insertApp(
  db: Db,
  name: string,
  source: AppSource,
  now = Date.now(),
  parentId: string | null = null,
): Promise<App> {
  const row = {
    id: newId(now),
    name,
    source: JSON.stringify(source),
    status: 'created',
    created_at: nowIso(now),
    updated_at: nowIso(now),
    deleting_at: null,
    parent_app_id: parentId,
  };
  try {
    await db.insertInto('apps').values(row).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw new HttpError('conflict', `An app named "${name}" already exists`);
    throw e;
  }
  return toApp(row);
}

export async function listApps(db: Db): Promise<App[]> {
  const rows = await db
    .selectFrom('apps')
    .selectAll()
    .where('deleting_at', 'is', null)
    .where('parent_app_id', 'is', null)
    .orderBy('name')
    .execute();
  return rows.map(toApp);
}

export interface AppPageQuery {
  /** The name of the last app of the previous page (names are unique and sorted). */
  after?: string;
  limit: number;
  /** A part of the name, any case. */
  search?: string;
  /** The apps the caller may see; null: every app. */
  appIds: readonly string[] | null;
}

/** One page of apps by name (previews and apps being deleted left out), and how many match in all. */
export async function pageApps(
  db: Db,
  q: AppPageQuery,
): Promise<{ apps: App[]; more: boolean; total: number }> {
  let base = db.selectFrom('apps').where('deleting_at', 'is', null).where('parent_app_id', 'is', null);
  if (q.appIds)
    base = q.appIds.length ? base.where('id', 'in', [...q.appIds]) : base.where(sql<boolean>`1 = 0`);
  if (q.search) {
    // Names are lower case: the search is lowered, and its wildcards taken literally.
    const like = '%' + q.search.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c) + '%';
    base = base.where(sql<boolean>`name like ${like} escape '\\'`);
  }
  let page = base
    .selectAll()
    .orderBy('name')
    .limit(q.limit + 1);
  if (q.after !== undefined) page = page.where('name', '>', q.after);
  const [rows, count] = await Promise.all([
    page.execute(),
    base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { apps: rows.slice(0, q.limit).map(toApp), more: rows.length > q.limit, total: Number(count.n) };
}

/**
 * The app, or 404. Apps being deleted are still found, so a retried DELETE can finish them. A
 * preview's own row is found only when asked for (`includePreview`): the API reaches previews
 * through their app, so no app route acts on one by its id.
 */
export async function getApp(
  db: Db,
  id: string,
  opts: { includeDeleting?: boolean; includePreview?: boolean } = {},
): Promise<App & { deleting: boolean }> {
  const row = await db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
  if (
    !row ||
    (row.deleting_at !== null && !opts.includeDeleting) ||
    (row.parent_app_id && !opts.includePreview)
  )
    throw notFound('No such app');
  return { ...toApp(row), deleting: row.deleting_at !== null };
}

export async function updateApp(
  db: Db,
  id: string,
  patch: {
    name?: string;
    source?: AppSource;
    build_limits?: BuildLimits | null;
    sleep_after_minutes?: number | null;
    release_command?: string[] | null;
    release_timeout_s?: number | null;
  },
  now = Date.now(),
): Promise<App> {
  const set: Record<string, string | number | null> = { updated_at: nowIso(now) };
  if (patch.release_command !== undefined)
    set.release_command = patch.release_command?.length ? JSON.stringify(patch.release_command) : null;
  if (patch.release_timeout_s !== undefined) set.release_timeout_s = patch.release_timeout_s;
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.source !== undefined) set.source = JSON.stringify(patch.source);
  if (patch.sleep_after_minutes !== undefined) set.sleep_after_minutes = patch.sleep_after_minutes;
  if (patch.build_limits !== undefined)
    set.build_limits =
      patch.build_limits && Object.keys(patch.build_limits).length
        ? JSON.stringify(patch.build_limits)
        : null;
  try {
    const r = await db
      .updateTable('apps')
      .set(set)
      .where('id', '=', id)
      .where('deleting_at', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) throw notFound('No such app');
  } catch (e) {
    if (isUniqueViolation(e)) throw new HttpError('conflict', `An app named "${patch.name}" already exists`);
    throw e;
  }
  return getApp(db, id);
}

export async function setAppStatus(db: Db, id: string, status: AppStatus, now = Date.now()): Promise<void> {
  await db
    .updateTable('apps')
    .set({ status, updated_at: nowIso(now) })
    .where('id', '=', id)
    .execute();
}

/** Marks the app asleep (`at`) or awake (null); answers whether the row changed. */
export async function setSleeping(db: Db, id: string, at: number | null): Promise<boolean> {
  let q = db
    .updateTable('apps')
    .set({ sleeping_at: at === null ? null : nowIso(at) })
    .where('id', '=', id);
  q =
    at === null
      ? q.where('sleeping_at', 'is not', null)
      : q.where('sleeping_at', 'is', null).where('deleting_at', 'is', null);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function isSleeping(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('apps').select('sleeping_at').where('id', '=', id).executeTakeFirst();
  return !!row?.sleeping_at;
}

export async function markDeleting(db: Db, id: string, now = Date.now()): Promise<void> {
  await db
    .updateTable('apps')
    .set({ deleting_at: nowIso(now) })
    .where('id', '=', id)
    .where('deleting_at', 'is', null)
    .execute();
}

/** The last step of a delete: rows (env, services, deployments cascade with the app). */
export async function deleteAppRows(db: Db, id: string): Promise<void> {
  await db.deleteFrom('apps').where('id', '=', id).execute();
}

export interface ServiceSettings {
  port: number | null;
  health_path: string | null;
  /** Seconds the previous version may keep its connections after a switch (lib/deploy/drain.ts). */
  drain_s: number;
}

export async function serviceSettings(db: Db, appId: string): Promise<Map<string, ServiceSettings>> {
  const rows = await db.selectFrom('app_services').selectAll().where('app_id', '=', appId).execute();
  return new Map(
    rows.map((r) => [
      r.name,
      { port: r.port, health_path: r.health_path, drain_s: r.drain_s ?? DEFAULT_DRAIN_S },
    ]),
  );
}

/** `drain_s: null` goes back to the default. */
export async function patchServiceSettings(
  db: Db,
  appId: string,
  name: string,
  patch: { port?: number | null; health_path?: string | null; drain_s?: number | null },
): Promise<ServiceSettings> {
  const current = (await serviceSettings(db, appId)).get(name) ?? {
    port: null,
    health_path: null,
    drain_s: DEFAULT_DRAIN_S,
  };
  const next = {
    port: patch.port === undefined ? current.port : patch.port,
    health_path: patch.health_path === undefined ? current.health_path : patch.health_path,
    drain_s: patch.drain_s === undefined ? current.drain_s : (patch.drain_s ?? DEFAULT_DRAIN_S),
  };
  const row = { ...next, drain_s: next.drain_s === DEFAULT_DRAIN_S ? null : next.drain_s };
  await db
    .insertInto('app_services')
    .values({ app_id: appId, name, ...row })
    .onConflict((c) => c.columns(['app_id', 'name']).doUpdateSet(row))
    .execute();
  return next;
}

export async function getAppByName(db: Db, name: string): Promise<App | null> {
  const row = await db
    .selectFrom('apps')
    .selectAll()
    .where('name', '=', name)
    .where('deleting_at', 'is', null)
    .executeTakeFirst();
  return row ? toApp(row) : null;
}

/** The newest deployment of each app of `appIds` (ids are time-ordered), for listings. */
export async function lastDeployments(db: Db, appIds: readonly string[]): Promise<Map<string, Deployment>> {
  const out = new Map<string, Deployment>();
  if (!appIds.length) return out;
  const ids = [...appIds];
  const rows = await db
    .selectFrom('deployments')
    .selectAll()
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('deployments as d2')
        .select((e) => e.fn.max('d2.id').as('id'))
        .where('d2.app_id', 'in', ids)
        .groupBy('d2.app_id'),
    )
    .execute();
  for (const r of rows) out.set(r.app_id, toDeployment(r));
  return out;
}
