import { z } from 'zod';
import { noContent } from '../../../../lib/http/respond.js';
import { notFound } from '../../../../lib/http/errors.js';
import { revokeSession } from '../../../../lib/auth/sessions.js';
import { ID_PATTERN } from '../../../../lib/crypto/random.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';

const params = z.object({ id: z.string().regex(ID_PATTERN, 'not a session id') });
export const schema: HandlerModule['schema'] = { params };

export const DELETE: Handler<z.infer<typeof params>> = async (_req, { env, principal, params, audit }) => {
  audit({ action: 'auth.session_revoked', target: params.id });
  if (!(await revokeSession(env.db, principal!.user.id, params.id))) throw notFound('No such session');
  return noContent();
};
