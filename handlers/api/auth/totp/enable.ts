import { z } from 'zod';
import { confirmTotp } from '#lib/auth/flows.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'self.manage',
    summary: 'Enable TOTP with a code from the new secret; answers the one-time recovery codes',
    stepUp: true,
    sessionOnly: true,
    rateLimit: true,
    body: z.strictObject({ code: z.string().regex(/^\d{6}$/, 'six digits') }),
    responses: { 200: z.object({ enabled: z.literal(true), recovery_codes: z.array(z.string()) }) },
    audit: { action: 'auth.totp_enabled' },
  },
  async (_req, { env, body, principal, reply }) =>
    reply(200, { enabled: true, recovery_codes: await confirmTotp(env, principal!.user.id, body.code) }),
);
