import { z } from 'zod';
import { PASSWORD_MAX, PASSWORD_MIN } from '#lib/auth/users.js';
import { changePassword } from '#lib/auth/flows.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'self.manage',
    summary: "Change the caller's password",
    description: 'Needs the current password; ends every other session of the operator (API tokens stay).',
    // The current password is its proof of presence; a token may not change how its owner signs in.
    sessionOnly: true,
    rateLimit: true,
    body: z.strictObject({
      current_password: z.string().min(1).max(PASSWORD_MAX),
      new_password: z
        .string()
        .min(PASSWORD_MIN, `at least ${PASSWORD_MIN} characters`)
        .max(PASSWORD_MAX, `at most ${PASSWORD_MAX} characters`),
    }),
    responses: { 204: null },
    audit: { action: 'auth.password_changed' },
  },
  async (_req, { env, body, principal, reply }) => {
    await changePassword(env, principal!, body);
    return reply(204);
  },
);
