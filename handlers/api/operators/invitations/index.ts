import { z } from 'zod';
import { actingOperator } from '#lib/auth/operators.js';
import { createInvitation, listInvitations, publicBase } from '#lib/auth/invitations.js';
import { createdInvitationSchema, invitationSchema } from '#lib/api/auth.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';
import { inviteBody } from '../_lib.js';

export const GET = route(
  {
    summary: 'Invitations and reset links, newest first (never their links)',
    permission: 'operators.manage',
    responses: { 200: items(invitationSchema) },
  },
  async (_req, { env, reply }) => reply(200, { items: await listInvitations(env.db, env.now()) }),
);

export const POST = route(
  {
    summary:
      'Invite an operator: a single-use link, shown only in this answer (only an owner invites an owner)',
    description: '`app_ids` only for deployers and viewers; `expires_in_hours` 1..168, default 48.',
    permission: 'operators.manage',
    stepUp: true,
    body: inviteBody,
    responses: { 201: z.object({ invitation: createdInvitationSchema }) },
    audit: { action: 'operator.invited' },
  },
  async (_req, { env, principal, body, reply, audit }) => {
    const actor = await actingOperator(env.db, principal!.user.id);
    const base = await publicBase(env.db, env.config);
    const invitation = await createInvitation(env.db, actor, actor.id, body, base, env.now());
    audit({
      target: invitation.id,
      detail: { role: invitation.role, app_ids: invitation.app_ids, expires_at: invitation.expires_at },
    });
    return reply(201, { invitation });
  },
);
