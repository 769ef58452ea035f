import { z } from 'zod';
import { HttpError } from '#lib/http/errors.js';
import { disableTotp } from '#lib/auth/totp.js';
import { secondFactorLogin } from '#lib/auth/flows.js';
import { userSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';

// POST completes a login that is pending TOTP (no session yet); DELETE turns 2FA off.
export const POST = route(
  {
    summary:
      'Finish a login with a TOTP or recovery code (needs the svc_pre cookie from POST /api/auth/login)',
    auth: 'public',
    rateLimit: true,
    body: z.strictObject({ code: z.string().min(1).max(32) }),
    responses: { 200: z.object({ user: userSchema }) },
    audit: { action: 'auth.login' },
  },
  async (request, { env, body, client, reply, audit }) => {
    const outcome = await secondFactorLogin(env, request, client, body.code);
    if (!outcome.ok) {
      audit({ action: 'auth.totp_failed', actor: outcome.user, via: 'totp' });
      throw new HttpError('invalid_credentials', 'The code is wrong or was already used');
    }
    audit({ actor: outcome.user, via: 'session', detail: { second_factor: true } });
    return reply(200, { user: outcome.user }, outcome.headers);
  },
);

export const DELETE = route(
  {
    permission: 'self.manage',
    summary: 'Turn two-factor authentication off',
    stepUp: true,
    sessionOnly: true,
    responses: { 200: z.object({ enabled: z.literal(false) }) },
    audit: { action: 'auth.totp_disabled' },
  },
  async (_req, { env, principal, reply }) => {
    await disableTotp(env.db, principal!.user.id, env.now());
    return reply(200, { enabled: false });
  },
);
