import { z } from 'zod';
import { checkDnsOf } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { dnsCheckSchema } from '#lib/api/instance.js';

/** Does `host` resolve to this host? The same check every domain status uses. */
export const GET = route(
  {
    permission: 'instance.read',
    summary: 'Does `host` resolve to this host? (the check every domain status uses)',
    query: z.object({ host: z.string().max(2048) }),
    responses: { 200: dnsCheckSchema },
  },
  async (_req, { env, query, reply }) => reply(200, await checkDnsOf(env, query.host)),
);
