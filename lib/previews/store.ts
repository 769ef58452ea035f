// Rows of previews: the app's preview settings, its preview-only variables (sealed like env) and
// one row per preview, tied to the child app row it deploys as.
import type { Db } from '../db/index.js';
import { lockedOn, nowIso } from '../db/index.js';
import type { PreviewTable } from '../db/schema.js';
import { requireSealer, type Sealer } from '../crypto/seal.js';
import { badRequest, notFound } from '../http/errors.js';
import { previewEnvBinding, type EnvItem } from '../apps/env.js';
import { ENV_MAX_VALUE, ENV_MAX_VARS } from '../apps/model.js';
import { ACTIVE } from '../apps/deployment.js';
import {
  DEFAULT_SETTINGS,
  FIRST_API_NUMBER,
  MAX_NUMBER,
  type PreviewDatabase,
  type PreviewSettings,
} from './model.js';

export async function getSettings(db: Db, appId: string): Promise<PreviewSettings> {
  const row = await db
    .selectFrom('preview_settings')
    .selectAll()
    .where('app_id', '=', appId)
    .executeTakeFirst();
  if (!row) return { ...DEFAULT_SETTINGS, inherit_env: [] };
  return {
    enabled: row.enabled === 1,
    from_forks: row.from_forks === 1,
    ttl_hours: row.ttl_hours,
    max: row.max,
    inherit_env: JSON.parse(row.inherit_env) as string[],
    database: row.database as PreviewDatabase,
    sleep_after_minutes:
      row.sleep_after_minutes === undefined ? DEFAULT_SETTINGS.sleep_after_minutes : row.sleep_after_minutes,
  };
}

export async function putSettings(
  db: Db,
  appId: string,
  s: PreviewSettings,
  now: number,
): Promise<PreviewSettings> {
  const values = {
    enabled: s.enabled ? 1 : 0,
    from_forks: s.from_forks ? 1 : 0,
    ttl_hours: s.ttl_hours,
    max: s.max,
    inherit_env: JSON.stringify([...new Set(s.inherit_env)].sort()),
    database: s.database,
    sleep_after_minutes: s.sleep_after_minutes,
    updated_at: nowIso(now),
  };
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('preview_settings')
      .values({ app_id: appId, ...values })
      .onConflict((c) => c.column('app_id').doUpdateSet(values))
      .execute();
    // Existing previews follow at once; only the rows whose setting changes (a change counts as activity).
    await tx
      .updateTable('apps')
      .set({ sleep_after_minutes: s.sleep_after_minutes, updated_at: nowIso(now) })
      .where('parent_app_id', '=', appId)
      .where((eb) =>
        s.sleep_after_minutes === null
          ? eb('sleep_after_minutes', 'is not', null)
          : eb.or([
              eb('sleep_after_minutes', 'is', null),
              eb('sleep_after_minutes', '!=', s.sleep_after_minutes),
            ]),
      )
      .execute();
  });
  return getSettings(db, appId);
}

export async function listPreviewEnv(db: Db, sealer: Sealer, appId: string): Promise<EnvItem[]> {
  const rows = await db
    .selectFrom('preview_env')
    .selectAll()
    .where('app_id', '=', appId)
    .orderBy('key')
    .execute();
  return rows.map((r) => ({
    key: r.key,
    secret: r.secret === 1,
    value: r.secret === 1 ? null : sealer.open(r.sealed, previewEnvBinding(appId, r.key)),
  }));
}

/** Replaces the set, as PUT /api/apps/{id}/env does (value null keeps a stored value). */
export async function replacePreviewEnv(
  db: Db,
  sealer: Sealer,
  appId: string,
  items: Array<{ key: string; value: string | null; secret?: boolean }>,
): Promise<EnvItem[]> {
  if (items.length > ENV_MAX_VARS)
    throw badRequest(`At most ${ENV_MAX_VARS} variables`, [{ field: 'items', message: 'too many' }]);
  const seen = new Set<string>();
  for (const [i, it] of items.entries()) {
    if (seen.has(it.key))
      throw badRequest(`Duplicate key "${it.key}"`, [{ field: `items.${i}.key`, message: 'duplicate' }]);
    seen.add(it.key);
    if (it.value !== null && Buffer.byteLength(it.value) > ENV_MAX_VALUE)
      throw badRequest(`Value of "${it.key}" is larger than ${ENV_MAX_VALUE} bytes`, [
        { field: `items.${i}.value`, message: 'too large' },
      ]);
  }
  requireSealer(sealer);
  await db.transaction().execute(async (tx) => {
    // Read, decided on, then written: the app's row is locked so two changes run one after the other.
    await tx.selectFrom('apps').select('id').where('id', '=', appId).$call(lockedOn(tx)).execute();
    const existing = new Map(
      (await tx.selectFrom('preview_env').selectAll().where('app_id', '=', appId).execute()).map((r) => [
        r.key,
        r,
      ]),
    );
    const next = items.map((it, i) => {
      const old = existing.get(it.key);
      if (it.value === null && !old)
        throw badRequest(`"${it.key}" has no stored value to keep: give a value`, [
          { field: `items.${i}.value`, message: 'required for a new key' },
        ]);
      const secret = it.secret ?? (old ? old.secret === 1 : true);
      const sealed =
        it.value === null ? old!.sealed : sealer.seal(it.value, previewEnvBinding(appId, it.key));
      return { app_id: appId, key: it.key, secret: secret ? 1 : 0, sealed };
    });
    await tx.deleteFrom('preview_env').where('app_id', '=', appId).execute();
    if (next.length) await tx.insertInto('preview_env').values(next).execute();
  });
  return listPreviewEnv(db, sealer, appId);
}

export async function listPreviewRows(db: Db, appId: string): Promise<PreviewTable[]> {
  return db.selectFrom('previews').selectAll().where('app_id', '=', appId).orderBy('number').execute();
}

export async function getPreviewRow(db: Db, appId: string, id: string): Promise<PreviewTable> {
  const row = await db
    .selectFrom('previews')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound('No such preview');
  return row;
}

export async function previewByNumber(db: Db, appId: string, number: number): Promise<PreviewTable | null> {
  return (
    (await db
      .selectFrom('previews')
      .selectAll()
      .where('app_id', '=', appId)
      .where('number', '=', number)
      .executeTakeFirst()) ?? null
  );
}

/** The lowest number from 1000 up that no preview of the app holds. */
export async function nextFreeNumber(db: Db, appId: string): Promise<number> {
  const taken = new Set(
    (
      await db
        .selectFrom('previews')
        .select('number')
        .where('app_id', '=', appId)
        .where('number', '>=', FIRST_API_NUMBER)
        .execute()
    ).map((r) => r.number),
  );
  let n = FIRST_API_NUMBER;
  while (taken.has(n) && n < MAX_NUMBER) n++;
  return n;
}

export async function expiredPreviews(db: Db, now: number): Promise<PreviewTable[]> {
  return db
    .selectFrom('previews')
    .selectAll()
    .where('expires_at', '<=', nowIso(now))
    .orderBy('expires_at')
    .execute();
}

/**
 * Why a delivery for preview `row` at `commit` of `branch` would redo what is there: its latest
 * deployment is of that commit and is queued, running or succeeded (what the preview serves, awake
 * or asleep). Null when it would not (a new commit, a failed deployment, no deployment yet). A
 * short commit (Bitbucket's) matches as a prefix.
 */
export async function alreadyAt(
  db: Db,
  row: PreviewTable,
  branch: string,
  commit: string,
): Promise<string | null> {
  if (!row.deployment_id || row.branch !== branch) return null;
  const d = await db
    .selectFrom('deployments')
    .select(['id', 'status', 'commit_sha', 'commit_wanted'])
    .where('id', '=', row.deployment_id)
    .executeTakeFirst();
  if (!d) return null;
  const same = (c: string | null) => !!c && (c === commit || (commit.length < 40 && c.startsWith(commit)));
  if (!same(d.commit_wanted) && !same(d.commit_sha) && !same(row.commit_sha)) return null;
  const at = `preview ${row.number} is already`;
  const what = `commit ${commit.slice(0, 12)} of ${branch} (deployment ${d.id})`;
  if (d.status === 'succeeded') return `${at} live at ${what}`;
  if ((ACTIVE as readonly string[]).includes(d.status))
    return `${at} ${d.status === 'queued' ? 'queued' : 'being deployed'} at ${what}`;
  return null;
}

export async function insertPreviewRow(db: Db, row: PreviewTable): Promise<void> {
  await db.insertInto('previews').values(row).execute();
}

export async function updatePreviewRow(db: Db, id: string, patch: Partial<PreviewTable>): Promise<void> {
  await db.updateTable('previews').set(patch).where('id', '=', id).execute();
}

export async function deletePreviewRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('previews').where('id', '=', id).execute();
}

// The preview's own app row (its child), as the preview sets it up before each deployment.

/** The child's stored status; undefined when its row is gone. */
export async function childStatus(db: Db, childId: string): Promise<string | undefined> {
  return (await db.selectFrom('apps').select('status').where('id', '=', childId).executeTakeFirst())?.status;
}

export async function updateChild(
  db: Db,
  childId: string,
  set: { source?: string; sleep_after_minutes: number | null; updated_at?: string },
): Promise<void> {
  await db.updateTable('apps').set(set).where('id', '=', childId).execute();
}

/** Removes a child row that never got its preview row (nothing else of it exists yet). */
export async function deleteChildRow(db: Db, childId: string): Promise<void> {
  await db.deleteFrom('apps').where('id', '=', childId).execute();
}

/** The preview apps (children) of an app that are asleep. */
export async function sleepingChildren(db: Db, parentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('apps')
    .select('id')
    .where('parent_app_id', '=', parentId)
    .where('sleeping_at', 'is not', null)
    .execute();
  return rows.map((r) => r.id);
}

/** The variables that name the app's managed databases. */
export async function databaseVariables(db: Db, appId: string): Promise<string[]> {
  return (await db.selectFrom('app_databases').select('env_var').where('app_id', '=', appId).execute()).map(
    (r) => r.env_var,
  );
}

/** The app's own variables of these keys (sealed under the app's binding). */
export function envRowsOf(db: Db, appId: string, keys: readonly string[]) {
  return db
    .selectFrom('app_env')
    .selectAll()
    .where('app_id', '=', appId)
    .where('key', 'in', [...keys])
    .execute();
}

export function previewEnvRows(db: Db, appId: string) {
  return db.selectFrom('preview_env').selectAll().where('app_id', '=', appId).execute();
}

/** The child's variables become `rows`, except the ones in `kept` (its own databases' URLs). */
export async function replaceChildEnv(
  tx: Db,
  childId: string,
  kept: readonly string[],
  rows: Array<{ app_id: string; key: string; secret: number; sealed: string }>,
): Promise<void> {
  let clear = tx.deleteFrom('app_env').where('app_id', '=', childId);
  if (kept.length) clear = clear.where('key', 'not in', [...kept]);
  await clear.execute();
  if (rows.length) await tx.insertInto('app_env').values(rows).execute();
}

/** The child's service settings become a copy of the app's. */
export async function copyServiceSettings(tx: Db, parentId: string, childId: string): Promise<void> {
  const services = await tx.selectFrom('app_services').selectAll().where('app_id', '=', parentId).execute();
  await tx.deleteFrom('app_services').where('app_id', '=', childId).execute();
  if (services.length)
    await tx
      .insertInto('app_services')
      .values(services.map((s) => ({ ...s, app_id: childId })))
      .execute();
}
