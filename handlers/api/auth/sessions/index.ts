import { listSessions } from '#lib/auth/sessions-store.js';
import { sessionSchema } from '#lib/api/auth.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'self.read',
    summary: "The caller's live sessions",
    responses: { 200: items(sessionSchema) },
  },
  async (_req, { env, principal, reply }) => {
    const p = principal!;
    return reply(200, {
      items: await listSessions(env.db, p.user.id, p.kind === 'session' ? p.credentialId : null, env.now()),
    });
  },
);
