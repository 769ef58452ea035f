import { z } from 'zod';
import { notFound } from '#lib/http/errors.js';
import { revokeSession } from '#lib/auth/sessions-store.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { route } from '#lib/http/route.js';

export const DELETE = route(
  {
    permission: 'self.manage',
    summary: 'End one of the caller’s sessions',
    params: z.object({ id: z.string().regex(ID_PATTERN, 'not a session id') }),
    responses: { 204: null },
    audit: { action: 'auth.session_revoked', target: (c) => c.params.id },
  },
  async (_req, { env, principal, params, reply }) => {
    if (!(await revokeSession(env.db, principal!.user.id, params.id))) throw notFound('No such session');
    return reply(204);
  },
);
