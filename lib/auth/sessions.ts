// Session ids are 256-bit random values; only their SHA-256 is stored, so a database leak
// hands out no usable cookie. The CSRF token is an HMAC of the session id: bound to it, never stored.
import { createHmac } from 'node:crypto';
import type { Db } from '../db/index.js';
import { hotGet, hotRun, nowIso } from '../db/index.js';
import { then, type Maybe } from '../util/maybe.js';
import { newId, randomToken, sha256Hex } from '../crypto/random.js';
import { publicUser, type PublicUser } from './users.js';
import { credentialCache, invalidateCredentials } from './cache.js';
import { accessOf, type Access } from './access.js';

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Signs `svc_pre` and derives CSRF tokens; generated once per instance. */
    signingKey: Uint8Array;
  }
}

export interface SessionLimits {
  idleSeconds: number;
  maxSeconds: number;
}

export function csrfFor(signingKey: Uint8Array, rawSession: string): string {
  return createHmac('sha256', signingKey).update('csrf:').update(rawSession).digest('base64url');
}

export async function createSession(
  db: Db,
  userId: string,
  meta: { ip: string | null; userAgent: string | null },
  limits: SessionLimits,
  now = Date.now(),
): Promise<{ raw: string; id: string }> {
  const raw = randomToken(32);
  const id = newId(now);
  await db
    .insertInto('sessions')
    .values({
      id,
      token_hash: sha256Hex(raw),
      user_id: userId,
      created_at: nowIso(now),
      last_seen_at: nowIso(now),
      expires_at: nowIso(now + limits.maxSeconds * 1000),
      ip: meta.ip,
      user_agent: meta.userAgent ? meta.userAgent.slice(0, 256) : null,
      step_up_until: null,
    })
    .execute();
  return { raw, id };
}

export interface ResolvedSession {
  id: string;
  stepUpUntil: string | null;
  user: PublicUser;
  access: Access;
}

// last_seen_at is written at most once a minute: a write per request would cost more than the lookup.
const TOUCH_MS = 60_000;

interface SessionRow {
  sid: string;
  last_seen_at: string;
  expires_at: string;
  step_up_until: string | null;
  id: string;
  username: string;
  totp_enabled: number;
  role: string;
  app_ids: string | null;
  disabled: number;
  sso_subject: string | null;
}
const cache = credentialCache<SessionRow>();

const SESSION_LOOKUP = `select s.id as sid, s.last_seen_at, s.expires_at, s.step_up_until, u.id, u.username, u.totp_enabled,
         u.role, u.app_ids, u.disabled, u.sso_subject
       from sessions s join users u on u.id = s.user_id where s.token_hash = ?`;

/**
 * Synchronous on SQLite on purpose: every cookie request runs it, and better-sqlite3 answers in
 * place. On PostgreSQL a lookup that misses the cache is a promise.
 */
export function resolveSession(
  db: Db,
  raw: string,
  limits: SessionLimits,
  now = Date.now(),
): Maybe<ResolvedSession | null> {
  if (raw.length !== 43) return null;
  // Every cookie request runs this: a short-lived cache, else a cached statement.
  const cached = cache.get(raw, now);
  if (cached) return sessionOf(db, raw, cached, true, limits, now);
  return then(hotGet<SessionRow>(db, SESSION_LOOKUP, sha256Hex(raw)), (row) =>
    sessionOf(db, raw, row, false, limits, now),
  );
}

function sessionOf(
  db: Db,
  raw: string,
  row: SessionRow | undefined,
  cached: boolean,
  limits: SessionLimits,
  now: number,
): Maybe<ResolvedSession | null> {
  // A disabled operator's sessions stay in the table (enabling them again restores them) but act as nothing.
  if (!row || row.disabled !== 0) return null;
  const lastSeen = Date.parse(row.last_seen_at);
  if (Date.parse(row.expires_at) <= now || lastSeen + limits.idleSeconds * 1000 <= now) {
    cache.delete(raw);
    return then(hotRun(db, 'delete from sessions where id = ?', row.sid), () => null);
  }
  let touched: Maybe<void> = undefined;
  if (now - lastSeen > TOUCH_MS) {
    row.last_seen_at = nowIso(now);
    touched = hotRun(db, 'update sessions set last_seen_at = ? where id = ?', row.last_seen_at, row.sid);
  }
  // Kept from the lookup, not from each use: the TTL bounds how long a change made elsewhere goes unseen.
  if (!cached) cache.set(raw, row, now);
  return then(touched, () => ({
    id: row.sid,
    stepUpUntil: row.step_up_until,
    user: publicUser(row),
    access: accessOf(row.role, row.app_ids),
  }));
}

export async function deleteSessionByRaw(db: Db, raw: string): Promise<void> {
  await db.deleteFrom('sessions').where('token_hash', '=', sha256Hex(raw)).execute();
  invalidateCredentials();
}

export async function listSessions(db: Db, userId: string, currentId: string | null, now = Date.now()) {
  const rows = await db
    .selectFrom('sessions')
    .select(['id', 'created_at', 'last_seen_at', 'expires_at', 'ip', 'user_agent'])
    .where('user_id', '=', userId)
    .where('expires_at', '>', nowIso(now))
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((r) => ({ ...r, current: r.id === currentId }));
}

export async function revokeSession(db: Db, userId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('sessions')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  invalidateCredentials();
  return Number(r.numDeletedRows) > 0;
}
