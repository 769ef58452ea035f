// Per-app webhook secret (sealed), push/tag trigger rules, and what was already received: delivery
// ids for a retention window, and the ref updates themselves (see recordPush).
import type { ExpressionBuilder } from 'kysely';
import type { Db } from '../db/index.js';
import { dialectOf, nowIso } from '../db/index.js';
import { sql } from '../db/kysely.js';
import type { Database } from '../db/schema.js';
import { ACTIVE } from '../apps/deployment.js';
import { requireSealer, type Sealer } from '../crypto/seal.js';
import { newId, randomToken } from '../crypto/random.js';
import { badRequest } from '../http/errors.js';
import { validatePattern } from './triggers.js';

export const webhookBinding = (appId: string) => `app:${appId}:webhook`;
export const DELIVERY_RETENTION_MS = 24 * 3600 * 1000;
/** Per app: a flood of validly signed deliveries cannot grow the tables past these. */
export const MAX_DELIVERIES_PER_APP = 1000;
export const MAX_PUSHES_PER_APP = 1000;
export const MAX_TRIGGERS = 50;

export async function webhookSecret(db: Db, sealer: Sealer, appId: string): Promise<string | null> {
  const row = await db
    .selectFrom('app_webhooks')
    .select('secret_sealed')
    .where('app_id', '=', appId)
    .executeTakeFirst();
  if (!row || !sealer.available) return null;
  return sealer.open(row.secret_sealed, webhookBinding(appId));
}

export async function hasWebhookSecret(db: Db, appId: string): Promise<boolean> {
  return (
    (await db.selectFrom('app_webhooks').select('app_id').where('app_id', '=', appId).executeTakeFirst()) !==
    undefined
  );
}

/** A new secret replaces the old at once; the caller shows it once and never again. */
export async function rotateWebhookSecret(
  db: Db,
  sealer: Sealer,
  appId: string,
  now = Date.now(),
): Promise<string> {
  requireSealer(sealer);
  const secret = randomToken(32);
  const sealed = sealer.seal(secret, webhookBinding(appId));
  await db
    .insertInto('app_webhooks')
    .values({ app_id: appId, secret_sealed: sealed, created_at: nowIso(now) })
    .onConflict((c) => c.column('app_id').doUpdateSet({ secret_sealed: sealed, created_at: nowIso(now) }))
    .execute();
  return secret;
}

export async function removeWebhookSecret(db: Db, appId: string): Promise<boolean> {
  const r = await db.deleteFrom('app_webhooks').where('app_id', '=', appId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/**
 * Deletes the app's rows past the newest `keep`, insertion order breaking ties: SQLite's rowid,
 * PostgreSQL's ctid (the row's place, which follows insertion in these append-only tables).
 */
async function keepNewest(
  db: Db,
  table: 'webhook_deliveries' | 'webhook_pushes',
  appId: string,
  keep: number,
): Promise<void> {
  const t = sql.table(table);
  const id = sql.raw(dialectOf(db) === 'postgres' ? 'ctid' : 'rowid');
  const limit = sql.raw(dialectOf(db) === 'postgres' ? '' : 'LIMIT -1');
  await sql`DELETE FROM ${t} WHERE ${id} IN (SELECT ${id} FROM ${t} WHERE app_id = ${appId}
    ORDER BY received_at DESC, ${id} DESC ${limit} OFFSET ${keep})`.execute(db);
}

/** True when this delivery id was already seen for the app within the window (and records it). */
export async function deliverySeen(
  db: Db,
  appId: string,
  deliveryId: string,
  now = Date.now(),
): Promise<boolean> {
  const cutoff = nowIso(now - DELIVERY_RETENTION_MS);
  await db.deleteFrom('webhook_deliveries').where('received_at', '<', cutoff).execute();
  const r = await db
    .insertInto('webhook_deliveries')
    .values({ app_id: appId, delivery_id: deliveryId, received_at: nowIso(now) })
    .onConflict((c) => c.columns(['app_id', 'delivery_id']).doNothing())
    .executeTakeFirst();
  const repeat = Number(r.numInsertedOrUpdatedRows ?? 0n) === 0;
  if (!repeat) {
    await keepNewest(db, 'webhook_deliveries', appId, MAX_DELIVERIES_PER_APP);
  }
  return repeat;
}

/** Lets the forge's retry through when queueing the delivery failed. */
export async function forgetDelivery(db: Db, appId: string, deliveryId: string): Promise<void> {
  await db
    .deleteFrom('webhook_deliveries')
    .where('app_id', '=', appId)
    .where('delivery_id', '=', deliveryId)
    .execute();
}

/** One ref update as the forge signed it: full ref, previous commit ('' for a new ref), new commit. */
export interface PushKey {
  ref: string;
  old: string;
  new: string;
}

/**
 * Records a ref update; false when it was already recorded for the app. Kept without a time limit
 * (an old tag push replayed months later must not roll the app back), bounded per app instead.
 * A force-push back to an earlier commit is a new update (its previous commit differs), so it deploys.
 */
export async function recordPush(db: Db, appId: string, key: PushKey, now = Date.now()): Promise<boolean> {
  const r = await db
    .insertInto('webhook_pushes')
    .values({ app_id: appId, ref: key.ref, old_sha: key.old, new_sha: key.new, received_at: nowIso(now) })
    .onConflict((c) => c.columns(['app_id', 'ref', 'old_sha', 'new_sha']).doNothing())
    .executeTakeFirst();
  if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
  await keepNewest(db, 'webhook_pushes', appId, MAX_PUSHES_PER_APP);
  return true;
}

export async function forgetPush(db: Db, appId: string, key: PushKey): Promise<void> {
  await db
    .deleteFrom('webhook_pushes')
    .where('app_id', '=', appId)
    .where('ref', '=', key.ref)
    .where('old_sha', '=', key.old)
    .where('new_sha', '=', key.new)
    .execute();
}

/**
 * Why a push of `commit` to `ref` (a branch or tag name) must not deploy: the same commit of that
 * ref is already queued or running, or is what the app serves now. null when it may deploy.
 */
export async function alreadyDeploying(
  db: Db,
  appId: string,
  ref: string,
  commit: string,
): Promise<string | null> {
  const sameCommit = (eb: ExpressionBuilder<Database, 'deployments'>) =>
    eb.or([eb('commit_wanted', '=', commit), eb('commit_sha', '=', commit)]);
  const active = await db
    .selectFrom('deployments')
    .select(['id', 'status'])
    .where('app_id', '=', appId)
    .where('status', 'in', [...ACTIVE])
    .where('ref', '=', ref)
    .where(sameCommit)
    .executeTakeFirst();
  if (active)
    return `commit ${commit.slice(0, 12)} of ${ref} is already ${active.status === 'queued' ? 'queued' : 'being deployed'} (deployment ${active.id})`;
  // The app serves what its latest succeeded deployment deployed.
  const live = await db
    .selectFrom('deployments')
    .select(['id', 'ref', 'commit_sha', 'commit_wanted'])
    .where('app_id', '=', appId)
    .where('status', '=', 'succeeded')
    .orderBy('finished_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (live && live.ref === ref && (live.commit_sha === commit || live.commit_wanted === commit))
    return `commit ${commit.slice(0, 12)} of ${ref} is already live (deployment ${live.id})`;
  return null;
}

export interface TriggerView {
  id: string;
  event: 'push' | 'tag' | 'pull_request';
  pattern: string;
  enabled: boolean;
}

export async function listTriggers(db: Db, appId: string): Promise<TriggerView[]> {
  const rows = await db
    .selectFrom('app_triggers')
    .selectAll()
    .where('app_id', '=', appId)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    event: r.event as 'push' | 'tag' | 'pull_request',
    pattern: r.pattern,
    enabled: r.enabled === 1,
  }));
}

export async function addTrigger(
  db: Db,
  appId: string,
  t: { event: 'push' | 'tag' | 'pull_request'; pattern: string; enabled?: boolean },
  now = Date.now(),
): Promise<TriggerView> {
  const v = validatePattern(t.pattern);
  if (!v.ok) throw badRequest(`Invalid pattern: ${v.reason}`, [{ field: 'pattern', message: v.reason }]);
  const count = (await listTriggers(db, appId)).length;
  if (count >= MAX_TRIGGERS)
    throw badRequest(`At most ${MAX_TRIGGERS} triggers per app`, [
      { field: 'pattern', message: 'too many triggers' },
    ]);
  const row = {
    id: newId(now),
    app_id: appId,
    event: t.event,
    pattern: t.pattern,
    enabled: t.enabled === false ? 0 : 1,
    created_at: nowIso(now),
  };
  await db.insertInto('app_triggers').values(row).execute();
  return { id: row.id, event: t.event, pattern: t.pattern, enabled: row.enabled === 1 };
}

export type TriggerPatch = Partial<Pick<TriggerView, 'event' | 'pattern' | 'enabled'>>;

/** Changes a rule in place (pausing one keeps its id and pattern); null when the app has no such rule. */
export async function updateTrigger(
  db: Db,
  appId: string,
  id: string,
  patch: TriggerPatch,
): Promise<TriggerView | null> {
  if (patch.pattern !== undefined) {
    const v = validatePattern(patch.pattern);
    if (!v.ok) throw badRequest(`Invalid pattern: ${v.reason}`, [{ field: 'pattern', message: v.reason }]);
  }
  const set: { event?: string; pattern?: string; enabled?: number } = {};
  if (patch.event !== undefined) set.event = patch.event;
  if (patch.pattern !== undefined) set.pattern = patch.pattern;
  if (patch.enabled !== undefined) set.enabled = patch.enabled ? 1 : 0;
  if (Object.keys(set).length)
    await db.updateTable('app_triggers').set(set).where('app_id', '=', appId).where('id', '=', id).execute();
  const r = await db
    .selectFrom('app_triggers')
    .selectAll()
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  return r
    ? {
        id: r.id,
        event: r.event as 'push' | 'tag' | 'pull_request',
        pattern: r.pattern,
        enabled: r.enabled === 1,
      }
    : null;
}

export async function removeTrigger(db: Db, appId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('app_triggers')
    .where('app_id', '=', appId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export const PROVIDERS = ['github', 'gitea', 'forgejo', 'gitlab', 'bitbucket'] as const;

/**
 * Where the forge should deliver. The URL comes from configuration only: a request's Host header
 * is whatever the client sent, and an operator pasting a URL built from it would send the forge's
 * deliveries (and signatures) there.
 */
export async function webhookInfo(
  db: Db,
  config: { publicUrl: string | null; controlDomain: string | null },
  appId: string,
) {
  const path = `/webhooks/${appId}`;
  const base = config.publicUrl ?? (config.controlDomain ? `https://${config.controlDomain}` : null);
  const secret_set = await hasWebhookSecret(db, appId);
  const providers = [...PROVIDERS];
  if (base) return { url: `${base}${path}`, secret_set, providers };
  return {
    url: path,
    url_hint:
      'The control plane does not know its public address: set SVC_PUBLIC_URL (or SVC_BASE_DOMAIN) to see the full URL; until then, prefix this path with the address your forge reaches the control plane at.',
    secret_set,
    providers,
  };
}
