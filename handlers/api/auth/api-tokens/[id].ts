import { z } from 'zod';
import { notFound } from '#lib/http/errors.js';
import { revokeApiToken } from '#lib/auth/tokens-store.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { route } from '#lib/http/route.js';

export const DELETE = route(
  {
    permission: 'self.manage',
    summary: 'Revoke an API token at once',
    params: z.object({ id: z.string().regex(ID_PATTERN, 'not a token id') }),
    responses: { 204: null },
    audit: { action: 'auth.api_token_revoked', target: (c) => c.params.id },
  },
  async (_req, { env, principal, params, reply }) => {
    if (!(await revokeApiToken(env.db, principal!.user.id, params.id, env.now())))
      throw notFound('No such API token');
    return reply(204);
  },
);
