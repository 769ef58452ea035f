import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { HttpError, badRequest } from '../../../lib/http/errors.js';
import { findUser, PASSWORD_MAX } from '../../../lib/auth/users.js';
import { verifyPassword } from '../../../lib/auth/passwords.js';
import { consumeSecondFactor } from '../../../lib/auth/totp.js';
import { markStepUp } from '../../../lib/auth/stepup.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const rateLimit: HandlerModule['rateLimit'] = ['POST'];

const body = z.strictObject({
  password: z.string().min(1).max(PASSWORD_MAX).optional(),
  code: z.string().min(1).max(32).optional(),
});
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const POST: Handler<{}, z.infer<typeof body>> = async (_req, { env, body, principal, audit }) => {
  const p = principal!;
  const user = await findUser(env.db, p.user.id);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  let ok: boolean;
  if (user.totp_enabled === 1) {
    // With 2FA on, the second factor is what proves presence; a password alone would weaken it.
    if (!body.code) throw badRequest('A TOTP or recovery code is required when two-factor authentication is enabled', [{ field: 'code', message: 'required' }]);
    ok = await consumeSecondFactor(env.db, env.sealer, user.id, body.code, env.now());
  } else {
    if (!body.password) throw badRequest('password is required', [{ field: 'password', message: 'required' }]);
    // An authenticated operator: never queued behind strangers' login attempts.
    ok = await verifyPassword(body.password, user.password_hash, 'priority');
  }
  audit({ action: 'auth.step_up' });
  if (!ok) throw new HttpError('invalid_credentials', 'Verification failed');
  const until = await markStepUp(env.db, p, env.now());
  return json({ verified_until: until });
};
