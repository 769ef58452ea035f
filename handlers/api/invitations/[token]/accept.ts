import { z } from 'zod';
import { acceptInvitation } from '#lib/auth/invitations.js';
import { hashPassword } from '#lib/auth/passwords.js';
import { startSession } from '#lib/auth/login.js';
import { publicUser, PASSWORD_MAX, PASSWORD_MIN, USERNAME_PATTERN } from '#lib/auth/users.js';
import { findUser } from '#lib/auth/users-store.js';
import { HttpError } from '#lib/http/errors.js';
import { userSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';
import { tokenParams } from './_lib.js';

export const POST = route(
  {
    summary:
      'Accept an invitation (`{username, password}`: a new operator) or a reset link (`{password}`), and sign in',
    description:
      'Single use: a second accept answers 404. A username already taken answers 409 and the link stays usable. A reset clears TOTP and recovery codes and ends every other session.',
    auth: 'public',
    rateLimit: true,
    params: tokenParams,
    body: z.strictObject({
      username: z
        .string()
        .regex(USERNAME_PATTERN, 'letters, digits, ".", "_", "@", "-"; at most 64')
        .optional(),
      password: z
        .string()
        .min(PASSWORD_MIN, `at least ${PASSWORD_MIN} characters`)
        .max(PASSWORD_MAX, `at most ${PASSWORD_MAX} characters`),
    }),
    responses: { 201: z.object({ user: userSchema }) },
    // The target is the invitation's id, named by the handler: never the token in the path.
    audit: { action: 'operator.invitation_accepted', target: () => null },
  },
  async (request, { env, params, body, client, reply, audit }) => {
    const hash = () => hashPassword(body.password, env.config.passwordCost);
    const accepted = await acceptInvitation(
      env.db,
      params.token,
      { username: body.username, hashPassword: hash },
      env.now(),
    );
    const user = await findUser(env.db, accepted.userId);
    if (!user) throw new HttpError('not_found', 'This link is unknown, used or expired');
    const pub = publicUser(user);
    audit({
      action: accepted.kind === 'reset' ? 'operator.password_reset' : 'operator.invitation_accepted',
      actor: pub,
      via: accepted.kind,
      target: accepted.userId,
      detail: { invitation_id: accepted.invitationId, role: user.role },
    });
    return reply(201, { user: pub }, await startSession(env, request, client, user.id));
  },
);
