import { HttpError } from '../http/errors.js';
import { parseCookies } from '../http/cookies.js';
import type { Principal } from '../http/handler.js';
import type { Services } from '../http/handler.js';
import { resolveApiToken } from './tokens.js';
import { resolveSession } from './sessions.js';
import { then, type Maybe } from '../util/maybe.js';

export const SESSION_COOKIE = 'svc_session';
export const CSRF_COOKIE = 'svc_csrf';
export const PRE_COOKIE = 'svc_pre';

export const BEARER = /^bearer[ \t]+([^\s]+)[ \t]*$/i;

/**
 * A bearer header, when present, alone decides (an invalid one is 401 even beside a valid cookie).
 * Otherwise the session cookie. Returns null when neither is present or the session is gone.
 * Synchronous on SQLite: the hot path answers from the credential cache or one prepared statement.
 */
export function authenticate(
  env: Services,
  headers: { get(name: string): string | null },
): Maybe<Principal | null> {
  const authz = headers.get('authorization');
  if (authz !== null) {
    // RFC 9110: the scheme is case-insensitive (`bearer`, `BEARER`).
    const m = BEARER.exec(authz);
    if (!m) throw new HttpError('unauthorized', 'Authorization header must be "Bearer <token>"');
    return then(resolveApiToken(env.db, m[1]!, env.now()), (t): Principal => {
      if (!t) throw new HttpError('unauthorized', 'API token is invalid, expired or revoked');
      return {
        kind: 'token',
        user: t.user,
        credentialId: t.id,
        stepUpUntil: t.stepUpUntil,
        permissions: t.access.permissions,
        appIds: t.access.appIds,
      };
    });
  }
  const raw = parseCookies(headers.get('cookie'))[SESSION_COOKIE];
  if (!raw) return null;
  const limits = { idleSeconds: env.config.sessionIdleSeconds, maxSeconds: env.config.sessionMaxSeconds };
  return then(resolveSession(env.db, raw, limits, env.now()), (s): Principal | null =>
    s
      ? {
          kind: 'session',
          user: s.user,
          credentialId: s.id,
          stepUpUntil: s.stepUpUntil,
          rawSession: raw,
          permissions: s.access.permissions,
          appIds: s.access.appIds,
        }
      : null,
  );
}
