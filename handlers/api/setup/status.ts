import { z } from 'zod';
import { countUsers } from '#lib/auth/users-store.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    summary:
      'Whether first-boot setup is still open, and whether sign-in with an OpenID Connect provider is offered',
    description:
      '`oidc_name`: the name of the provider (SVC_OIDC_NAME, default its host) when `oidc` is true.',
    auth: 'public',
    responses: { 200: z.object({ open: z.boolean(), oidc: z.boolean(), oidc_name: z.string().optional() }) },
  },
  async (_req, { env, reply }) => {
    const oidc = env.config.oidc;
    return reply(200, {
      open: (await countUsers(env.db)) === 0,
      oidc: oidc !== null,
      ...(oidc ? { oidc_name: oidc.name } : {}),
    });
  },
);
