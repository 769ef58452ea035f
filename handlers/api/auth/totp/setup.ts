import { json } from '../../../../lib/http/respond.js';
import { HttpError } from '../../../../lib/http/errors.js';
import { newTotpSecret, otpauthUrl, totpBinding } from '../../../../lib/auth/totp.js';
import { findUser } from '../../../../lib/auth/users.js';
import { nowIso } from '../../../../lib/db/index.js';
import type { Handler } from '../../../../lib/http/handler.js';

export const POST: Handler = async (_req, { env, principal, audit }) => {
  const user = await findUser(env.db, principal!.user.id);
  if (!user) throw new HttpError('unauthorized', 'Authentication required');
  if (user.totp_enabled === 1) throw new HttpError('conflict', 'Two-factor authentication is already enabled; disable it first');
  const secret = await newTotpSecret();
  const sealed = env.sealer.seal(secret, totpBinding(user.id) + ':pending');
  await env.db.updateTable('users').set({ totp_pending: sealed, updated_at: nowIso(env.now()) }).where('id', '=', user.id).execute();
  audit({ action: 'auth.totp_setup' });
  return json({ secret, otpauth_url: await otpauthUrl(user.username, secret) });
};
