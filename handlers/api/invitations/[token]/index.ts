import { z } from 'zod';
import { openInvitation } from '#lib/auth/invitations.js';
import { route } from '#lib/http/route.js';
import { tokenParams } from './_lib.js';

export const GET = route(
  {
    summary: 'What an invitation or reset link offers (404 when unknown, used or expired)',
    auth: 'public',
    rateLimit: true,
    params: tokenParams,
    responses: {
      200: z.object({
        role: z.enum(['owner', 'admin', 'deployer', 'viewer']).nullable(),
        expires_at: z.string(),
        kind: z.enum(['invite', 'reset']),
        username: z.string().optional().describe('A reset link: the operator whose password it sets'),
      }),
    },
  },
  async (_req, { env, params, reply }) => {
    const inv = await openInvitation(env.db, params.token, env.now());
    return reply(200, {
      role: inv.role,
      expires_at: inv.expires_at,
      kind: inv.kind,
      ...(inv.kind === 'reset' && inv.username ? { username: inv.username } : {}),
    });
  },
);
