import { z } from 'zod';
import { regenerateRecoveryCodes } from '#lib/auth/flows.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'self.manage',
    summary:
      'Replace the recovery codes: the old ones stop working at once; the new ones are shown only here',
    description: 'Only with TOTP enabled (409 `conflict` otherwise).',
    stepUp: true,
    sessionOnly: true,
    responses: { 200: z.object({ recovery_codes: z.array(z.string()) }) },
    audit: { action: 'auth.recovery_codes_replaced' },
  },
  async (_req, { env, principal, reply }) =>
    reply(200, { recovery_codes: await regenerateRecoveryCodes(env, principal!.user.id) }),
);
