import { z } from 'zod';
import { actingOperator } from '#lib/auth/operators.js';
import { createResetLink, publicBase } from '#lib/auth/invitations.js';
import { createdInvitationSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';
import { operatorParams, resetBody } from '../_lib.js';

export const POST = route(
  {
    summary:
      'A reset link for an operator: it sets a new password and clears their TOTP (shown only in this answer)',
    description:
      'Accepted at POST /api/invitations/{token}/accept with `{password}`; their other sessions end and they are signed in. Earlier reset links of theirs stop working.',
    permission: 'owners.manage',
    stepUp: true,
    params: operatorParams,
    body: resetBody,
    responses: { 201: z.object({ invitation: createdInvitationSchema }) },
    audit: { action: 'operator.reset_link_created', target: (c) => c.params.id },
  },
  async (_req, { env, principal, params, body, reply, audit }) => {
    const actor = await actingOperator(env.db, principal!.user.id);
    const base = await publicBase(env.db, env.config);
    const { username, ...invitation } = await createResetLink(env.db, actor, params.id, actor.id, base, {
      hours: body?.expires_in_hours,
      now: env.now(),
    });
    audit({ detail: { username, invitation_id: invitation.id, expires_at: invitation.expires_at } });
    return reply(201, { invitation });
  },
);
