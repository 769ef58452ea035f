// Every query of sessions: stored by the SHA-256 of their id (sessions.ts makes and checks them).
// The lookup every cookie request runs is a hot statement: synchronous on SQLite.
import type { Db } from '../db/index.js';
import { hotGet, hotRun, nowIso } from '../db/index.js';
import type { Maybe } from '../util/maybe.js';
import { newId, randomToken, sha256Hex } from '../crypto/random.js';
import { invalidateCredentials } from './cache.js';

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

export interface SessionRow {
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

const SESSION_LOOKUP = `select s.id as sid, s.last_seen_at, s.expires_at, s.step_up_until, u.id, u.username, u.totp_enabled,
         u.role, u.app_ids, u.disabled, u.sso_subject
       from sessions s join users u on u.id = s.user_id where s.token_hash = ?`;

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

/** The session whose token hashes to `hash`, with its operator. */
export function lookupSession(db: Db, hash: string): Maybe<SessionRow | undefined> {
  return hotGet<SessionRow>(db, SESSION_LOOKUP, hash);
}

export function dropSession(db: Db, id: string): Maybe<void> {
  return hotRun(db, 'delete from sessions where id = ?', id);
}

export function touchSession(db: Db, id: string, lastSeenAt: string): Maybe<void> {
  return hotRun(db, 'update sessions set last_seen_at = ? where id = ?', lastSeenAt, id);
}

export interface SessionLimits {
  idleSeconds: number;
  maxSeconds: number;
}

/** The session stepped up until `until`. */
export async function sessionStepUp(db: Db, id: string, until: string): Promise<void> {
  await db.updateTable('sessions').set({ step_up_until: until }).where('id', '=', id).execute();
}
