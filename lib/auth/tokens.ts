// API tokens: `svc_` + 32 random bytes (base64url), shown once, stored as SHA-256 only.
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import { then, type Maybe } from '../util/maybe.js';
import { newId, randomToken, sha256Hex } from '../crypto/random.js';
import { publicUser, type PublicUser } from './users.js';
import { credentialCache } from './cache.js';
import { existingAppIds } from '../apps/store.js';
import {
  insertApiToken,
  liveTokenRows,
  lookupToken,
  roleOf,
  tokenGrantRow,
  touchToken,
  type TokenRow,
} from './tokens-store.js';
import { accessOf, operatorApps, type Access } from './access.js';
import { HttpError } from '../http/errors.js';
import { INSTANCE_WRITES, PERMISSION_NAMES, ROLE_PERMISSIONS, isRole, type Permission } from './roles.js';

export const TOKEN_PATTERN = /^svc_[A-Za-z0-9_-]{43}$/;

export interface ApiTokenView {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  /** Null: every permission its owner holds at the time of each request. */
  scopes: Permission[] | null;
  /** Null: every app its owner reaches. */
  app_ids: string[] | null;
}

/** What a token may do, within its owner's permissions (null: no narrowing). */
export interface TokenGrant {
  scopes: Permission[] | null;
  appIds: string[] | null;
}

export async function createApiToken(
  db: Db,
  userId: string,
  name: string,
  expiresAt: string | null,
  now = Date.now(),
  grant: TokenGrant = { scopes: null, appIds: null },
) {
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
    scopes: grant.scopes === null ? null : JSON.stringify(grant.scopes),
    app_ids: grant.appIds === null ? null : JSON.stringify(grant.appIds),
  };
  await insertApiToken(db, row);
  return {
    id: row.id,
    name,
    token,
    created_at: row.created_at,
    expires_at: expiresAt,
    scopes: grant.scopes,
    app_ids: grant.appIds,
  };
}

const jsonList = (v: string | null): string[] | null => (v === null ? null : (JSON.parse(v) as string[]));

/**
 * Checks what a new token asks for against what its creator holds now: their role's permissions
 * and apps, narrowed further by the token they act through, if any (a token never mints a wider
 * one). Omitted scopes or apps follow the creator: null for an operator (the token then follows
 * its owner's role as it changes), the acting token's own list for a token.
 */
export async function checkTokenGrant(
  db: Db,
  creator: { userId: string; tokenId: string | null },
  asked: { scopes?: readonly string[] | null; app_ids?: readonly string[] | null },
): Promise<TokenGrant> {
  const user = await roleOf(db, creator.userId);
  let held: Permission[] = isRole(user.role)
    ? PERMISSION_NAMES.filter((p) => ROLE_PERMISSIONS[user.role as keyof typeof ROLE_PERMISSIONS].has(p))
    : [];
  // The apps the role reaches: an admin's or owner's row may keep a list from a narrower role, which means nothing.
  let apps = operatorApps(user.role, user.app_ids);
  let inherited: TokenGrant = { scopes: null, appIds: null };
  if (creator.tokenId !== null) {
    const t = await tokenGrantRow(db, creator.tokenId);
    const tokenScopes = jsonList(t.scopes);
    const tokenApps = jsonList(t.app_ids);
    if (tokenScopes) held = held.filter((p) => tokenScopes.includes(p));
    if (tokenApps) apps = apps ? apps.filter((a) => tokenApps.includes(a)) : tokenApps;
    inherited = { scopes: tokenScopes ? held : null, appIds: tokenApps ? apps : null };
  }
  const grant: TokenGrant = { ...inherited };
  if (asked.scopes != null) {
    const lacking = asked.scopes.filter((p) => !held.includes(p as Permission));
    if (lacking.length > 0) {
      const which = lacking.map((p) => `"${p}"`).join(', ');
      throw new HttpError(
        'bad_request',
        `A token cannot have ${which}: ${lacking.length === 1 ? 'it is not one of your permissions' : 'they are not among your permissions'} (you hold ${held.join(', ') || 'none'})`,
        [{ field: 'scopes', message: `not one of your permissions: ${lacking.join(', ')}` }],
      );
    }
    // Stored in the table's order, once each: two requests for the same scopes store the same list.
    grant.scopes = PERMISSION_NAMES.filter((p) => asked.scopes!.includes(p));
  }
  if (asked.app_ids != null) {
    const unique = [...new Set(asked.app_ids)];
    const found = unique.length === 0 ? [] : await existingAppIds(db, unique);
    const known = new Set(found);
    // One answer for "no such app" and "not yours": an app outside the creator's list stays unseen.
    const refused = unique.filter((a) => !known.has(a) || (apps !== null && !apps.includes(a)));
    if (refused.length > 0) {
      throw new HttpError(
        'bad_request',
        `No app you can reach has the id ${refused.map((a) => `"${a}"`).join(', ')}`,
        [{ field: 'app_ids', message: `unknown app: ${refused.join(', ')}` }],
      );
    }
    grant.appIds = unique;
  }
  // A token limited to apps acts on those apps only (lib/auth/access.ts drops the rest): asking for both is refused, not narrowed unseen.
  const wide =
    grant.appIds !== null || apps !== null
      ? (asked.scopes ?? []).filter((p) => (INSTANCE_WRITES as readonly string[]).includes(p))
      : [];
  if (wide.length > 0) {
    throw new HttpError(
      'bad_request',
      `A token limited to apps cannot have ${wide.map((p) => `"${p}"`).join(', ')}: they act outside every app`,
      [{ field: 'scopes', message: `not with app_ids: ${wide.join(', ')}` }],
    );
  }
  return grant;
}

export interface ResolvedToken {
  id: string;
  stepUpUntil: string | null;
  user: PublicUser;
  access: Access;
}

const TOUCH_MS = 60_000;

const cache = credentialCache<TokenRow>();

/**
 * Synchronous on SQLite on purpose: every bearer request runs it, and better-sqlite3 answers in
 * place. On PostgreSQL a lookup that misses the cache is a promise.
 */
export function resolveApiToken(db: Db, token: string, now = Date.now()): Maybe<ResolvedToken | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  // Every bearer request runs this: a short-lived cache, else a cached statement.
  const cached = cache.get(token, now);
  if (cached) return tokenOf(db, token, cached, true, now);
  return then(lookupToken(db, sha256Hex(token)), (row) => tokenOf(db, token, row, false, now));
}

function tokenOf(
  db: Db,
  token: string,
  row: TokenRow | undefined,
  cached: boolean,
  now: number,
): Maybe<ResolvedToken | null> {
  if (!row || row.revoked_at !== null || row.disabled !== 0) return null;
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return null;
  let touched: Maybe<void> = undefined;
  if (row.last_used_at === null || now - Date.parse(row.last_used_at) > TOUCH_MS) {
    row.last_used_at = nowIso(now);
    touched = touchToken(db, row.tid, row.last_used_at);
  }
  // Kept from the lookup, not from each use: the TTL bounds how long a change made elsewhere goes unseen.
  if (!cached) cache.set(token, row, now);
  // Scopes meet the owner's role as it is now: a demoted owner's tokens lose what the role lost.
  const access = accessOf(row.role, row.app_ids, { scopes: row.scopes, app_ids: row.token_app_ids });
  return then(touched, () => ({
    id: row.tid,
    stepUpUntil: row.step_up_until,
    user: publicUser(row),
    access,
  }));
}

export async function listApiTokens(db: Db, userId: string): Promise<ApiTokenView[]> {
  const rows = await liveTokenRows(db, userId);
  return rows.map((r) => ({
    ...r,
    scopes: jsonList(r.scopes) as Permission[] | null,
    app_ids: jsonList(r.app_ids),
  }));
}
