import { z } from 'zod';
import { json, Headers } from '../../../lib/http/respond.js';
import { HttpError } from '../../../lib/http/errors.js';
import { serializeCookie } from '../../../lib/http/cookies.js';
import { findUserByName, PASSWORD_MAX, publicUser } from '../../../lib/auth/users.js';
import { dummyHash, verifyPassword } from '../../../lib/auth/passwords.js';
import { startSession } from '../../../lib/auth/login.js';
import { PRE_COOKIE } from '../../../lib/auth/principal.js';
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
  const user = await findUserByName(env.db, body.username);
  // Unknown user and wrong password take the same path: one full scrypt verification, one answer.
  const hash = user?.password_hash ?? (await dummyHash(env.config.passwordCost));
  const ok = (await verifyPassword(body.password, hash)) && user !== undefined;
  if (!ok || !user) {
    await recordAudit(env.db, { action: 'auth.login_failed', via: 'password', ip: client.ip, outcome: 401, detail: { username: body.username.slice(0, 64) } });
    throw new HttpError('invalid_credentials', 'Username or password is wrong');
  }
  if (user.totp_enabled === 1) {
    const pre = await signPreAuth(env.signingKey, user.id, env.now());
    const headers = new Headers();
    headers.append('set-cookie', serializeCookie(PRE_COOKIE, pre, { httpOnly: true, secure: client.secure, maxAge: PRE_AUTH_SECONDS }));
    return json({ totp_required: true }, 200, headers);
  }
  const headers = await startSession(env, request, client, user.id);
  await recordAudit(env.db, { actorId: user.id, actor: user.username, via: 'session', action: 'auth.login', ip: client.ip, outcome: 200 });
  return json({ user: publicUser(user) }, 200, headers);
};
