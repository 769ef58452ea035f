// Log drain rows: the URL and the headers sealed (bound to the drain id), a hint of the URL and
// the header names being all an answer shows; delivered and dropped counters added to in batches.
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { newId } from '../crypto/random.js';
import { notFound } from '../http/errors.js';
import type { DrainKind } from './kinds/index.js';

export const drainUrlBinding = (id: string) => `log_drains:${id}:url`;
export const drainHeadersBinding = (id: string) => `log_drains:${id}:headers`;

export interface LastDrainDelivery {
  at: string;
  ok: boolean;
  status: number | null;
  error: string | null;
  lines: number;
}

export interface DrainRow {
  id: string;
  name: string;
  kind: DrainKind;
  url_hint: string;
  app_ids: string[] | null;
  header_names: string[];
  enabled: boolean;
  last_delivery: LastDrainDelivery | null;
  delivered: number;
  dropped: number;
  created_at: string;
  updated_at: string;
}

type Row = Awaited<ReturnType<typeof rows>>[number];
const rows = (db: Db) => db.selectFrom('log_drains').selectAll().execute();

function view(r: Row): DrainRow {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind as DrainKind,
    url_hint: r.url_hint,
    app_ids: r.app_ids ? (JSON.parse(r.app_ids) as string[]) : null,
    header_names: JSON.parse(r.header_names) as string[],
    enabled: r.enabled === 1,
    last_delivery: r.last_delivery ? (JSON.parse(r.last_delivery) as LastDrainDelivery) : null,
    delivered: r.delivered,
    dropped: r.dropped,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export async function listDrainRows(db: Db): Promise<DrainRow[]> {
  return (await db.selectFrom('log_drains').selectAll().orderBy('created_at').orderBy('id').execute()).map(
    view,
  );
}

export async function getDrainRow(db: Db, id: string): Promise<DrainRow> {
  const r = await db.selectFrom('log_drains').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound(`No log drain with id "${id}"`);
  return view(r);
}

/** The stored row as it is (sealed values sealed): the audit state's reader. */
export function drainStoredRow(db: Db, id: string) {
  return db.selectFrom('log_drains').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface DrainSecrets {
  url: string;
  headers: Record<string, string>;
}

/** The URL and headers, opened only on the way out. */
export async function drainSecrets(db: Db, sealer: Sealer, id: string): Promise<DrainSecrets | null> {
  const r = await db
    .selectFrom('log_drains')
    .select(['url_sealed', 'headers_sealed'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) return null;
  return {
    url: sealer.open(r.url_sealed, drainUrlBinding(id)),
    headers: r.headers_sealed
      ? (JSON.parse(sealer.open(r.headers_sealed, drainHeadersBinding(id))) as Record<string, string>)
      : {},
  };
}

export interface DrainFields {
  name: string;
  kind: DrainKind;
  url: string;
  url_hint: string;
  app_ids: string[] | null;
  headers: Record<string, string>;
  enabled: boolean;
}

export async function insertDrain(
  db: Db,
  sealer: Sealer,
  f: DrainFields,
  now: number,
  id = newId(now),
): Promise<string> {
  const at = new Date(now).toISOString();
  const names = Object.keys(f.headers);
  await db
    .insertInto('log_drains')
    .values({
      id,
      name: f.name,
      kind: f.kind,
      url_sealed: sealer.seal(f.url, drainUrlBinding(id)),
      url_hint: f.url_hint,
      app_ids: f.app_ids ? JSON.stringify(f.app_ids) : null,
      headers_sealed: names.length ? sealer.seal(JSON.stringify(f.headers), drainHeadersBinding(id)) : null,
      header_names: JSON.stringify(names),
      enabled: f.enabled ? 1 : 0,
      last_delivery: null,
      delivered: 0,
      dropped: 0,
      created_at: at,
      updated_at: at,
    })
    .execute();
  return id;
}

export async function updateDrainRow(
  db: Db,
  sealer: Sealer,
  id: string,
  f: Partial<Omit<DrainFields, 'kind'>>,
  now: number,
): Promise<void> {
  const set: Record<string, unknown> = { updated_at: new Date(now).toISOString() };
  if (f.name !== undefined) set.name = f.name;
  if (f.url !== undefined) {
    set.url_sealed = sealer.seal(f.url, drainUrlBinding(id));
    set.url_hint = f.url_hint;
  }
  if (f.app_ids !== undefined) set.app_ids = f.app_ids ? JSON.stringify(f.app_ids) : null;
  if (f.headers !== undefined) {
    const names = Object.keys(f.headers);
    set.headers_sealed = names.length
      ? sealer.seal(JSON.stringify(f.headers), drainHeadersBinding(id))
      : null;
    set.header_names = JSON.stringify(names);
  }
  if (f.enabled !== undefined) set.enabled = f.enabled ? 1 : 0;
  await db.updateTable('log_drains').set(set).where('id', '=', id).execute();
}

/** Puts back sealed values as they were stored (a revert), without opening them. */
export async function restoreSealed(
  db: Db,
  id: string,
  v: { url_sealed?: string; url_hint?: string; headers_sealed?: string | null; header_names?: string },
): Promise<void> {
  await db.updateTable('log_drains').set(v).where('id', '=', id).execute();
}

export async function deleteDrainRow(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('log_drains').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Adds to the counters and sets the last delivery (one write per drain per flush). */
export async function addDrainCounts(
  db: Db,
  id: string,
  d: { delivered: number; dropped: number; last: LastDrainDelivery | null },
): Promise<void> {
  await db
    .updateTable('log_drains')
    .set((eb) => ({
      delivered: eb('delivered', '+', d.delivered),
      dropped: eb('dropped', '+', d.dropped),
      ...(d.last ? { last_delivery: JSON.stringify(d.last) } : {}),
    }))
    .where('id', '=', id)
    .execute();
}

export async function appIdsExist(db: Db, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const found = await db.selectFrom('apps').select('id').where('id', 'in', ids).execute();
  const have = new Set(found.map((r) => r.id));
  return ids.filter((i) => !have.has(i));
}

/** App name -> id, for every app not being deleted (containers name their app). */
export async function appIdsByName(db: Db): Promise<Map<string, string>> {
  const r = await db.selectFrom('apps').select(['id', 'name']).where('deleting_at', 'is', null).execute();
  return new Map(r.map((x) => [x.name, x.id]));
}

/** The app a deployment belongs to (its id and name), for its log lines. */
export async function deploymentApp(
  db: Db,
  deploymentId: string,
): Promise<{ id: string; name: string } | null> {
  const r = await db
    .selectFrom('deployments')
    .innerJoin('apps', 'apps.id', 'deployments.app_id')
    .select(['apps.id', 'apps.name'])
    .where('deployments.id', '=', deploymentId)
    .executeTakeFirst();
  return r ?? null;
}

export async function appNameOf(db: Db, id: string): Promise<string | null> {
  const r = await db.selectFrom('apps').select('name').where('id', '=', id).executeTakeFirst();
  return r?.name ?? null;
}
