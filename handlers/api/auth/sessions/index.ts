import { json } from '../../../../lib/http/respond.js';
import { listSessions } from '../../../../lib/auth/sessions.js';
import type { Handler } from '../../../../lib/http/handler.js';

export const GET: Handler = async (_req, { env, principal }) => {
  const p = principal!;
  return json({ items: await listSessions(env.db, p.user.id, p.kind === 'session' ? p.credentialId : null, env.now()) });
};
