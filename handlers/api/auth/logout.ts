import { noContent } from '../../../lib/http/respond.js';
import { revokeSession } from '../../../lib/auth/sessions.js';
import { endSessionCookies } from '../../../lib/auth/login.js';
import type { Handler } from '../../../lib/http/handler.js';

export const POST: Handler = async (_req, { env, principal, client, audit }) => {
  audit({ action: 'auth.logout' });
  if (principal?.kind === 'session') await revokeSession(env.db, principal.user.id, principal.credentialId);
  return noContent(endSessionCookies(client));
};
