import { z } from 'zod';
import { noContent } from '../../../../lib/http/respond.js';
import { notFound } from '../../../../lib/http/errors.js';
import { revokeApiToken } from '../../../../lib/auth/tokens.js';
import { ID_PATTERN } from '../../../../lib/crypto/random.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';

const params = z.object({ id: z.string().regex(ID_PATTERN, 'not a token id') });
export const schema: HandlerModule['schema'] = { params };

export const DELETE: Handler<z.infer<typeof params>> = async (_req, { env, principal, params, audit }) => {
  audit({ action: 'auth.api_token_revoked', target: params.id });
  if (!(await revokeApiToken(env.db, principal!.user.id, params.id, env.now()))) throw notFound('No such API token');
  return noContent();
};
