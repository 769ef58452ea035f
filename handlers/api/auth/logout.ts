import { revokeSession } from '#lib/auth/sessions-store.js';
import { endSessionCookies } from '#lib/auth/login.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'self.read',
    summary: 'Sign out: the session ends and its cookies are cleared',
    responses: { 204: null },
    audit: { action: 'auth.logout' },
  },
  async (_req, { env, principal, client, reply }) => {
    if (principal?.kind === 'session') await revokeSession(env.db, principal.user.id, principal.credentialId);
    return reply(204, null, endSessionCookies(client));
  },
);
