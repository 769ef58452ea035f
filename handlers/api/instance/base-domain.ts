import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { instanceDomains, putBaseDomain } from '../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

// The hostname rules are applied in lib/domains (its 400 names the rule broken).
const body = z.strictObject({ base_domain: z.string().max(2048).nullable() });
export const schema: HandlerModule['schema'] = { body: { PUT: body } };

export const GET: Handler = async (_req, { env }) => json({ ...(await instanceDomains(env)), proxy: env.edge.proxy.summary() });

/** Automatic hosts and the control domain follow at once; `null` clears (SVC_BASE_DOMAIN too). */
export const PUT: Handler<unknown, z.infer<typeof body>> = async (_req, { env, body, audit }) => {
  const before = await instanceDomains(env);
  const r = await putBaseDomain(env, body.base_domain);
  audit({ action: 'instance.base_domain', detail: { before: { base_domain: before.base_domain }, after: { base_domain: r.base_domain } } });
  return json(r);
};
