import { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { HttpError } from '../../../../lib/http/errors.js';
import { parseCookies } from '../../../../lib/http/cookies.js';
import { PRE_COOKIE } from '../../../../lib/auth/principal.js';
import { verifyPreAuth } from '../../../../lib/auth/signing.js';
import { consumeSecondFactor, disableTotp } from '../../../../lib/auth/totp.js';
import { findUser, publicUser } from '../../../../lib/auth/users.js';
import { startSession } from '../../../../lib/auth/login.js';
import { recordAudit } from '../../../../lib/audit/index.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';

// POST completes a login that is pending TOTP (no session yet); DELETE turns 2FA off.
export const auth: HandlerModule['auth'] = { POST: 'public', DELETE: 'operator' };
export const rateLimit: HandlerModule['rateLimit'] = ['POST'];
export const stepUp: HandlerModule['stepUp'] = ['DELETE'];

const body = z.strictObject({ code: z.string().min(1).max(32) });
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const POST: Handler<{}, z.infer<typeof body>> = async (request, { env, body, client }) => {
  const pre = parseCookies(request.headers.get('cookie'))[PRE_COOKIE];
  const userId = pre ? await verifyPreAuth(env.signingKey, pre, env.now()) : null;
  if (!userId) throw new HttpError('unauthorized', 'No pending login: sign in with username and password first');
  const user = await findUser(env.db, userId);
  if (!user || user.totp_enabled !== 1) throw new HttpError('unauthorized', 'No pending login: sign in with username and password first');
  if (!(await consumeSecondFactor(env.db, env.sealer, user.id, body.code, env.now()))) {
    await recordAudit(env.db, { actorId: user.id, actor: user.username, via: 'totp', action: 'auth.totp_failed', ip: client.ip, outcome: 401 });
    throw new HttpError('invalid_credentials', 'The code is wrong or was already used');
  }
  const headers = await startSession(env, request, client, user.id);
  await recordAudit(env.db, { actorId: user.id, actor: user.username, via: 'session', action: 'auth.login', ip: client.ip, outcome: 200, detail: { second_factor: true } });
  return json({ user: publicUser(user) }, 200, headers);
};

export const DELETE: Handler = async (_req, { env, principal, audit }) => {
  audit({ action: 'auth.totp_disabled' });
  await disableTotp(env.db, principal!.user.id, env.now());
  return json({ enabled: false });
};
