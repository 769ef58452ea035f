import { z } from 'zod';
import { instanceDomains, putBaseDomain } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { baseDomainSchema } from '#lib/api/instance.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'The base domain, the control domain and the proxy',
    responses: { 200: baseDomainSchema },
  },
  async (_req, { env, reply }) =>
    reply(200, { ...(await instanceDomains(env)), proxy: env.edge.proxy.summary() }),
);

/** Automatic hosts and the control domain follow at once; `null` clears (SVC_BASE_DOMAIN too). */
export const PUT = route(
  {
    permission: 'instance.owner',
    summary: 'Set the base domain (`null` clears it); automatic hosts and the control domain follow at once',
    // The hostname rules are applied in lib/domains (its 400 names the rule broken).
    body: z.strictObject({ base_domain: z.string().max(2048).nullable() }),
    responses: { 200: baseDomainSchema },
    audit: { action: 'instance.base_domain', state: { kind: 'base_domain', id: () => 'instance' } },
  },
  async (_req, { env, body, reply, audit }) => {
    const before = await instanceDomains(env);
    const r = await putBaseDomain(env, body.base_domain);
    audit({ detail: { before: { base_domain: before.base_domain }, after: { base_domain: r.base_domain } } });
    return reply(200, r);
  },
);
