import { z } from 'zod';
import { PASSWORD_MAX, PASSWORD_MIN, USERNAME_PATTERN } from '#lib/auth/users.js';
import { createFirstOperator } from '#lib/auth/flows.js';
import { userSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    summary: 'Create the first operator with the setup token (404 once setup is closed)',
    auth: 'public',
    rateLimit: true,
    body: z.strictObject({
      token: z.string().min(1).max(256),
      username: z.string().regex(USERNAME_PATTERN, 'letters, digits, ".", "_", "@", "-"; at most 64'),
      password: z
        .string()
        .min(PASSWORD_MIN, `at least ${PASSWORD_MIN} characters`)
        .max(PASSWORD_MAX, `at most ${PASSWORD_MAX} characters`),
    }),
    responses: { 201: z.object({ user: userSchema }) },
    audit: { action: 'setup.admin_created' },
  },
  async (_req, { env, body, reply, audit }) => {
    const user = await createFirstOperator(env, body);
    audit({ actor: user, via: 'setup', target: user.id });
    return reply(201, { user });
  },
);
