import { z } from 'zod';
import { PASSWORD_MAX } from '#lib/auth/users.js';
import { stepUp } from '#lib/auth/flows.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'self.read',
    summary: 'Prove presence for the step-up operations (5 minutes, bound to this session or token)',
    description: 'With TOTP enabled a TOTP or recovery `code` is required; otherwise the `password`.',
    rateLimit: true,
    body: z.strictObject({
      password: z.string().min(1).max(PASSWORD_MAX).optional(),
      code: z.string().min(1).max(32).optional(),
    }),
    responses: { 200: z.object({ verified_until: z.string() }) },
    audit: { action: 'auth.step_up' },
  },
  async (_req, { env, body, principal, reply }) =>
    reply(200, { verified_until: await stepUp(env, principal!, body) }),
);
