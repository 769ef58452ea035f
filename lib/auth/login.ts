// Login steps shared by the login, TOTP and setup handlers: issue the session and its cookies.
import type { Services } from '../http/handler.js';
import type { Client } from '../http/handler.js';
import { serializeCookie, clearCookie, parseCookies } from '../http/cookies.js';
import { Headers } from '../http/respond.js';
import { HttpError } from '../http/errors.js';
import { nowIso } from '../db/index.js';
import { csrfFor } from './sessions.js';
import { createSession, deleteSessionByRaw } from './sessions-store.js';
import { markLogin } from './users-store.js';
import { SESSION_COOKIE, CSRF_COOKIE, PRE_COOKIE } from './principal.js';
import { DEVICE_COOKIE, DEVICE_MAX_AGE, issueDevice } from './guard.js';

/** Creates a fresh session (rotating away any session the request carried) and its cookies. */
export async function startSession(
  env: Services,
  request: Request,
  client: Client,
  userId: string,
): Promise<Headers> {
  // Every sign-in path ends here: the last login is noted, and a disabled operator gets no session.
  if (!(await markLogin(env.db, userId, nowIso(env.now()))))
    throw new HttpError('forbidden', 'This operator is disabled');
  const previous = parseCookies(request.headers.get('cookie'))[SESSION_COOKIE];
  if (previous) await deleteSessionByRaw(env.db, previous);
  const limits = { idleSeconds: env.config.sessionIdleSeconds, maxSeconds: env.config.sessionMaxSeconds };
  const { raw } = await createSession(
    env.db,
    userId,
    { ip: client.ip, userAgent: client.userAgent },
    limits,
    env.now(),
  );
  const headers = new Headers();
  const maxAge = env.config.sessionMaxSeconds;
  headers.append(
    'set-cookie',
    serializeCookie(SESSION_COOKIE, raw, { httpOnly: true, secure: client.secure, maxAge }),
  );
  headers.append(
    'set-cookie',
    serializeCookie(CSRF_COOKIE, csrfFor(env.signingKey, raw), {
      httpOnly: false,
      secure: client.secure,
      maxAge,
    }),
  );
  headers.append('set-cookie', clearCookie(PRE_COOKIE, client.secure));
  // This browser is now a known device of the operator: a login flood does not lock it out.
  headers.append(
    'set-cookie',
    serializeCookie(DEVICE_COOKIE, issueDevice(env.signingKey, userId), {
      httpOnly: true,
      secure: client.secure,
      maxAge: DEVICE_MAX_AGE,
      path: '/api/auth',
      sameSite: 'Strict',
    }),
  );
  return headers;
}

export function endSessionCookies(client: Client): Headers {
  const h = new Headers();
  h.append('set-cookie', clearCookie(SESSION_COOKIE, client.secure));
  h.append('set-cookie', clearCookie(CSRF_COOKIE, client.secure, false));
  return h;
}
