// Every query of API tokens: stored by the SHA-256 of the token (tokens.ts makes and checks them).
// The lookup every bearer request runs is a hot statement: synchronous on SQLite.
import type { Insertable } from 'kysely';
import type { Db } from '../db/index.js';
import { hotGet, hotRun, nowIso } from '../db/index.js';
import type { ApiTokenTable } from '../db/schema.js';
import type { Maybe } from '../util/maybe.js';
import { invalidateCredentials } from './cache.js';

export async function insertApiToken(db: Db, row: Insertable<ApiTokenTable>): Promise<void> {
  await db.insertInto('api_tokens').values(row).execute();
}

/** The operator's role and app list, as stored. */
export function roleOf(db: Db, userId: string): Promise<{ role: string; app_ids: string | null }> {
  return db
    .selectFrom('users')
    .select(['role', 'app_ids'])
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
}

/** The scopes and apps a token was narrowed to (JSON lists, null: none). */
export function tokenGrantRow(
  db: Db,
  tokenId: string,
): Promise<{ scopes: string | null; app_ids: string | null }> {
  return db
    .selectFrom('api_tokens')
    .select(['scopes', 'app_ids'])
    .where('id', '=', tokenId)
    .executeTakeFirstOrThrow();
}

/** The operator's tokens not revoked, newest first. */
export function liveTokenRows(db: Db, userId: string) {
  return db
    .selectFrom('api_tokens')
    .select(['id', 'name', 'created_at', 'expires_at', 'last_used_at', 'scopes', 'app_ids'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .execute();
}

export interface TokenRow {
  tid: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  step_up_until: string | null;
  id: string;
  username: string;
  totp_enabled: number;
  role: string;
  app_ids: string | null;
  disabled: number;
  scopes: string | null;
  token_app_ids: string | null;
  sso_subject: string | null;
}

const TOKEN_LOOKUP = `select t.id as tid, t.expires_at, t.revoked_at, t.last_used_at, t.step_up_until, u.id, u.username, u.totp_enabled,
         u.role, u.app_ids, u.disabled, u.sso_subject, t.scopes, t.app_ids as token_app_ids
       from api_tokens t join users u on u.id = t.user_id where t.token_hash = ?`;

/** The token whose SHA-256 is `hash`, with its operator. */
export function lookupToken(db: Db, hash: string): Maybe<TokenRow | undefined> {
  return hotGet<TokenRow>(db, TOKEN_LOOKUP, hash);
}

export function touchToken(db: Db, id: string, lastUsedAt: string): Maybe<void> {
  return hotRun(db, 'update api_tokens set last_used_at = ? where id = ?', lastUsedAt, id);
}

export async function revokeApiToken(db: Db, userId: string, id: string, now = Date.now()): Promise<boolean> {
  const r = await db
    .updateTable('api_tokens')
    .set({ revoked_at: nowIso(now) })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  invalidateCredentials();
  return Number(r.numUpdatedRows) > 0;
}

/** The token stepped up until `until`. */
export async function tokenStepUp(db: Db, id: string, until: string): Promise<void> {
  await db.updateTable('api_tokens').set({ step_up_until: until }).where('id', '=', id).execute();
}
