// API tokens: `svc_` + 32 random bytes (base64url), shown once, stored as SHA-256 only.
import type { Db } from '../db/index.js';
import { hotStatement, nowIso } from '../db/index.js';
import { newId, randomToken, sha256Hex } from '../crypto/random.js';
import { publicUser, type PublicUser } from './users.js';
import { credentialCache, invalidateCredentials } from './cache.js';
import { accessOf, type Access } from './access.js';

export const TOKEN_PATTERN = /^svc_[A-Za-z0-9_-]{43}$/;

export interface ApiTokenView {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

export async function createApiToken(db: Db, userId: string, name: string, expiresAt: string | null, now = Date.now()) {
  const token = 'svc_' + randomToken(32);
  const row = {
    id: newId(now),
    user_id: userId,
    name,
    token_hash: sha256Hex(token),
    created_at: nowIso(now),
    expires_at: expiresAt,
    last_used_at: null,
    revoked_at: null,
    step_up_until: null,
  };
  await db.insertInto('api_tokens').values(row).execute();
  return { id: row.id, name, token, created_at: row.created_at, expires_at: expiresAt };
}

export interface ResolvedToken {
  id: string;
  stepUpUntil: string | null;
  user: PublicUser;
  access: Access;
}

const TOUCH_MS = 60_000;

interface TokenRow {
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
const cache = credentialCache<TokenRow>();

/** Synchronous on purpose: every bearer request runs it, and better-sqlite3 answers in place. */
export function resolveApiToken(db: Db, token: string, now = Date.now()): ResolvedToken | null {
  if (!TOKEN_PATTERN.test(token)) return null;
  // Every bearer request runs this: a short-lived cache, else a cached statement.
  const cached = cache.get(token, now);
  const row =
    cached ??
    (hotStatement(
      db,
      `select t.id as tid, t.expires_at, t.revoked_at, t.last_used_at, t.step_up_until, u.id, u.username, u.totp_enabled,
         u.role, u.app_ids, u.disabled, u.sso_subject, t.scopes, t.app_ids as token_app_ids
       from api_tokens t join users u on u.id = t.user_id where t.token_hash = ?`,
    ).get(sha256Hex(token)) as TokenRow | undefined);
  if (!row || row.revoked_at !== null || row.disabled !== 0) return null;
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return null;
  if (row.last_used_at === null || now - Date.parse(row.last_used_at) > TOUCH_MS) {
    row.last_used_at = nowIso(now);
    hotStatement(db, 'update api_tokens set last_used_at = ? where id = ?').run(row.last_used_at, row.tid);
  }
  // Kept from the lookup, not from each use: the TTL bounds how long a change made elsewhere goes unseen.
  if (!cached) cache.set(token, row, now);
  // Scopes meet the owner's role as it is now: a demoted owner's tokens lose what the role lost.
  const access = accessOf(row.role, row.app_ids, { scopes: row.scopes, app_ids: row.token_app_ids });
  return { id: row.tid, stepUpUntil: row.step_up_until, user: publicUser(row), access };
}

export async function listApiTokens(db: Db, userId: string): Promise<ApiTokenView[]> {
  return db
    .selectFrom('api_tokens')
    .select(['id', 'name', 'created_at', 'expires_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .execute();
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
