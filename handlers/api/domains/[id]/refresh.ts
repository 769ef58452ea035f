import { domainAppId } from '#lib/domains/store.js';
import { refreshDomain } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { domainSchema } from '#lib/api/domains.js';
import { proxySummarySchema } from '#lib/api/instance.js';
import { z } from 'zod';
import { domainParams } from '../_lib.js';

/** DNS and the served certificate checked now, and the proxy brought in line. */
export const POST = route(
  {
    permission: 'app.admin',
    app: (env, p) => domainAppId(env.db, p.id!),
    summary: "Check a domain's DNS and certificate now and bring the proxy in line",
    params: domainParams,
    responses: { 200: z.object({ domain: domainSchema, proxy: proxySummarySchema }) },
  },
  async (_req, { env, params, reply }) => reply(200, await refreshDomain(env, params.id)),
);
