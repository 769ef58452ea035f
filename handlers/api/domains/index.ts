import { z } from 'zod';
import { addDomain, listDomains } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { visible } from '#lib/auth/access.js';
import { domainListItemSchema, domainSchema } from '#lib/api/domains.js';
import { proxySummarySchema } from '#lib/api/instance.js';
import { createBody } from './_lib.js';

/** The hub: every domain, then the automatic hosts (`managed: true`, no id). */
export const GET = route(
  {
    permission: 'app.read',
    summary: 'Every domain, then the automatic hosts (`managed: true`, no id)',
    responses: { 200: z.object({ items: z.array(domainListItemSchema), proxy: proxySummarySchema }) },
  },
  async (_req, { env, reply, principal }) =>
    reply(200, {
      items: visible(principal, await listDomains(env), (d) => d.app_id),
      proxy: env.edge.proxy.summary(),
    }),
);

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Add a domain (an app service or a redirect)',
    body: createBody,
    responses: { 201: z.object({ domain: domainSchema, proxy: proxySummarySchema }) },
    audit: { action: 'domain.created', state: { kind: 'domain' } },
    appInBody: true,
  },
  async (_req, { env, body, reply, audit, permit }) => {
    // A redirect belongs to no app: outside the list of a caller limited to some.
    permit('app.admin', body.app_id ?? null);
    // Named before the work: a refused or failed creation is about that app too (the audit shows it to its readers only).
    audit({ appId: body.app_id ?? null });
    const { domain, proxy } = await addDomain(env, body);
    audit({
      target: domain.id,
      appId: domain.app_id,
      detail: {
        after: {
          hostname: domain.hostname,
          app_id: domain.app_id,
          service: domain.service,
          port: domain.port,
          redirect_to: domain.redirect_to,
        },
      },
    });
    return reply(201, { domain, proxy });
  },
);
