import type { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { addDomain, listDomains } from '../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';
import { createBody } from './_params.js';

export const schema: HandlerModule['schema'] = { body: { POST: createBody } };

/** The hub: every domain, then the automatic hosts (`managed: true`, no id). */
export const GET: Handler = async (_req, { env }) => json({ items: await listDomains(env), proxy: env.edge.proxy.summary() });

export const POST: Handler<unknown, z.infer<typeof createBody>> = async (_req, { env, body, audit }) => {
  const { domain, proxy } = await addDomain(env, body);
  audit({ action: 'domain.created', target: domain.id, detail: { after: { hostname: domain.hostname, app_id: domain.app_id, service: domain.service, port: domain.port, redirect_to: domain.redirect_to } } });
  return json({ domain, proxy }, 201);
};
