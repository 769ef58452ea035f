import { z } from 'zod';
import { json, Headers } from '../../../lib/http/respond.js';
import { HttpError } from '../../../lib/http/errors.js';
import { parseCookies, serializeCookie } from '../../../lib/http/cookies.js';
import { findUserByName, PASSWORD_MAX, publicUser } from '../../../lib/auth/users.js';
import { dummyHash, verifyPassword } from '../../../lib/auth/passwords.js';
import { startSession } from '../../../lib/auth/login.js';
import { PRE_COOKIE, SESSION_COOKIE } from '../../../lib/auth/principal.js';
import { resolveSession } from '../../../lib/auth/sessions.js';
import { DEVICE_COOKIE, readDevice } from '../../../lib/auth/guard.js';
import { PRE_AUTH_SECONDS, signPreAuth } from '../../../lib/auth/signing.js';
import { recordAudit } from '../../../lib/audit/index.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const auth: HandlerModule['auth'] = 'public';
export const rateLimit: HandlerModule['rateLimit'] = ['POST'];

const body = z.strictObject({
  username: z.string().min(1).max(128),
  password: z.string().min(1).max(PASSWORD_MAX, `at most ${PASSWORD_MAX} characters`),
});
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const POST: Handler<{}, z.infer<typeof body>> = async (request, { env, body, client }) => {
  const now = env.now();
  const user = await findUserByName(env.db, body.username);
  // A browser this operator logged in from before (or holding a live session of theirs) is known:
  // it skips the account lock and the strangers' hashing queue (lib/auth/guard.ts says why).
  const cookies = parseCookies(request.headers.get('cookie'));
  const device = readDevice(env.signingKey, cookies[DEVICE_COOKIE]);
  const knownDevice = user !== undefined && device !== null && device.userId === user.id && env.loginGuard.deviceInGoodStanding(device, now);
  const limits = { idleSeconds: env.config.sessionIdleSeconds, maxSeconds: env.config.sessionMaxSeconds };
  const raw = cookies[SESSION_COOKIE];
  const liveSession = user !== undefined && raw !== undefined && resolveSession(env.db, raw, limits, now)?.user.id === user.id;
  const known = knownDevice || liveSession;
  env.loginGuard.admit(body.username, known, now);
  // Unknown user and wrong password take the same path: one full scrypt verification, one answer.
  const hash = user?.password_hash ?? dummyHash(env.config.passwordCost);
  const ok = (await verifyPassword(body.password, hash, known ? 'priority' : 'normal')) && user !== undefined;
  if (!ok || !user) {
    if (env.loginGuard.failed(body.username, knownDevice ? device : null, now)) {
      env.log.warn({ username: body.username.slice(0, 64), ip: client.ip }, 'too many failed sign-ins: this account now answers 429 to unknown devices for a while');
    }
    await recordAudit(env.db, { action: 'auth.login_failed', via: 'password', ip: client.ip, outcome: 401, detail: { username: body.username.slice(0, 64) } });
    throw new HttpError('invalid_credentials', 'Username or password is wrong');
  }
  if (user.totp_enabled === 1) {
    const pre = await signPreAuth(env.signingKey, user.id, now);
    const headers = new Headers();
    headers.append('set-cookie', serializeCookie(PRE_COOKIE, pre, { httpOnly: true, secure: client.secure, maxAge: PRE_AUTH_SECONDS }));
    return json({ totp_required: true }, 200, headers);
  }
  const headers = await startSession(env, request, client, user.id);
  await recordAudit(env.db, { actorId: user.id, actor: user.username, via: 'session', action: 'auth.login', ip: client.ip, outcome: 200 });
  return json({ user: publicUser(user) }, 200, headers);
};
