// Session ids are 256-bit random values; only their SHA-256 is stored, so a database leak
// hands out no usable cookie. The CSRF token is an HMAC of the session id: bound to it, never stored.
import { createHmac } from 'node:crypto';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import { then, type Maybe } from '../util/maybe.js';
import { sha256Hex } from '../crypto/random.js';
import { publicUser, type PublicUser } from './users.js';
import { credentialCache } from './cache.js';
import {
  dropSession,
  lookupSession,
  touchSession,
  type SessionLimits,
  type SessionRow,
} from './sessions-store.js';
import { accessOf, type Access } from './access.js';

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Signs `svc_pre` and derives CSRF tokens; generated once per instance. */
    signingKey: Uint8Array;
  }
}

export function csrfFor(signingKey: Uint8Array, rawSession: string): string {
  return createHmac('sha256', signingKey).update('csrf:').update(rawSession).digest('base64url');
}

export interface ResolvedSession {
  id: string;
  stepUpUntil: string | null;
  user: PublicUser;
  access: Access;
}

// last_seen_at is written at most once a minute: a write per request would cost more than the lookup.
const TOUCH_MS = 60_000;

const cache = credentialCache<SessionRow>();

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
  return then(lookupSession(db, sha256Hex(raw)), (row) => sessionOf(db, raw, row, false, limits, now));
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
    return then(dropSession(db, row.sid), () => null);
  }
  let touched: Maybe<void> = undefined;
  if (now - lastSeen > TOUCH_MS) {
    row.last_seen_at = nowIso(now);
    touched = touchSession(db, row.sid, row.last_seen_at);
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
