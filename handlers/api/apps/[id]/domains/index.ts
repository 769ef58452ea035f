import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { addDomain, listDomains } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { domainListItemSchema, domainSchema } from '#lib/api/domains.js';
import { proxySummarySchema } from '#lib/api/instance.js';
import { appParams } from '../../_lib.js';
import { appDomainBody } from '../../../domains/_lib.js';

/** The app's domains and its automatic hosts. */
export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's domains and its automatic hosts",
    params: appParams,
    responses: { 200: z.object({ items: z.array(domainListItemSchema), proxy: proxySummarySchema }) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listDomains(env, params.id), proxy: env.edge.proxy.summary() });
  },
);

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Add a domain to an app',
    params: appParams,
    body: appDomainBody,
    responses: { 201: z.object({ domain: domainSchema, proxy: proxySummarySchema }) },
    audit: { action: 'domain.created', state: { kind: 'domain' } },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const { domain, proxy } = await addDomain(env, { ...body, app_id: params.id });
    audit({
      target: domain.id,
      detail: {
        after: {
          hostname: domain.hostname,
          app_id: domain.app_id,
          service: domain.service,
          port: domain.port,
          redirect_to: null,
        },
      },
    });
    return reply(201, { domain, proxy });
  },
);
