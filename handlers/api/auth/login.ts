import { z } from 'zod';
import { HttpError } from '#lib/http/errors.js';
import { PASSWORD_MAX } from '#lib/auth/users.js';
import { passwordLogin } from '#lib/auth/flows.js';
import { userSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    summary: 'Sign in with username and password',
    description:
      'Without TOTP: the user and the `svc_session` and `svc_csrf` cookies. With TOTP: `{"totp_required": true}` and a short-lived `svc_pre` cookie for POST /api/auth/totp.',
    auth: 'public',
    rateLimit: true,
    body: z.strictObject({
      username: z.string().min(1).max(128),
      password: z.string().min(1).max(PASSWORD_MAX, `at most ${PASSWORD_MAX} characters`),
    }),
    responses: {
      200: z.union([z.object({ user: userSchema }), z.object({ totp_required: z.literal(true) })]),
    },
    audit: { action: 'auth.login' },
  },
  async (request, { env, body, client, reply, audit }) => {
    const outcome = await passwordLogin(env, request, client, body);
    if (outcome.kind === 'failed') {
      audit({
        action: 'auth.login_failed',
        via: 'password',
        claimed: body.username.slice(0, 64),
        detail: { username: body.username.slice(0, 64) },
      });
      throw new HttpError('invalid_credentials', 'Username or password is wrong');
    }
    if (outcome.kind === 'second_factor') {
      audit({ skip: true });
      return reply(200, { totp_required: true }, outcome.headers);
    }
    audit({ actor: outcome.user, via: 'session' });
    return reply(200, { user: outcome.user }, outcome.headers);
  },
);
