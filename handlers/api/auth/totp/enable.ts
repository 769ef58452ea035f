import { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { HttpError } from '../../../../lib/http/errors.js';
import { enableTotp } from '../../../../lib/auth/totp.js';
import { findUser } from '../../../../lib/auth/users.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';

export const rateLimit: HandlerModule['rateLimit'] = ['POST'];
const body = z.strictObject({ code: z.string().regex(/^\d{6}$/, 'six digits') });
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const POST: Handler<{}, z.infer<typeof body>> = async (_req, { env, body, principal, audit }) => {
  const user = await findUser(env.db, principal!.user.id);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  if (user.totp_enabled === 1) throw new HttpError('conflict', 'Two-factor authentication is already enabled');
  if (!user.totp_pending) throw new HttpError('conflict', 'Call POST /api/auth/totp/setup first');
  audit({ action: 'auth.totp_enabled' });
  const codes = await enableTotp(env.db, env.sealer, user.id, user.totp_pending, body.code, env.now());
  if (!codes) throw new HttpError('invalid_credentials', 'The code does not match the new secret');
  return json({ enabled: true, recovery_codes: codes });
};
