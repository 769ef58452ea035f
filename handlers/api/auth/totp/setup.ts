import { z } from 'zod';
import { beginTotpSetup } from '#lib/auth/flows.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'self.manage',
    summary: 'Start enabling TOTP: a new secret and its otpauth:// URL',
    // Whoever holds the secret holds the second factor: a stolen token or an unattended session must not enrol one.
    stepUp: true,
    sessionOnly: true,
    responses: { 200: z.object({ secret: z.string(), otpauth_url: z.string() }) },
    audit: { action: 'auth.totp_setup' },
  },
  async (_req, { env, principal, reply }) => reply(200, await beginTotpSetup(env, principal!.user.id)),
);
