import { actingOperator } from '#lib/auth/operators.js';
import { revokeInvitation } from '#lib/auth/invitations.js';
import { route } from '#lib/http/route.js';
import { invitationParams } from '../_lib.js';

export const DELETE = route(
  {
    summary: 'Withdraw an invitation or reset link: it stops working at once',
    permission: 'operators.manage',
    params: invitationParams,
    responses: { 204: null },
    audit: { action: 'operator.invitation_revoked', target: (c) => c.params.id },
  },
  async (_req, { env, principal, params, reply, audit }) => {
    const actor = await actingOperator(env.db, principal!.user.id);
    const revoked = await revokeInvitation(env.db, actor, params.id);
    audit({ detail: revoked });
    return reply(204);
  },
);
