import type { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { addDomain, listDomains } from '../../../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';
import { appDomainBody } from '../../../domains/_params.js';

export const schema: HandlerModule['schema'] = { params: appParams, body: { POST: appDomainBody } };

/** The app's domains and its automatic hosts. */
export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ items: await listDomains(env, params.id), proxy: env.edge.proxy.summary() });
};

export const POST: Handler<AppParams, z.infer<typeof appDomainBody>> = async (_req, { env, params, body, audit }) => {
  await getApp(env.db, params.id);
  const { domain, proxy } = await addDomain(env, { ...body, app_id: params.id });
  audit({ action: 'domain.created', target: domain.id, detail: { after: { hostname: domain.hostname, app_id: domain.app_id, service: domain.service, port: domain.port, redirect_to: null } } });
  return json({ domain, proxy }, 201);
};
