import type { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { changeDomain, getDomain, removeDomain } from '../../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { domainParams, patchBody, type DomainParams } from '../_params.js';

export const schema: HandlerModule['schema'] = { params: domainParams, body: { PATCH: patchBody } };

const state = (d: { hostname: string; app_id: string | null; service: string | null; port: number | null; redirect_to: string | null }) => ({
  hostname: d.hostname,
  app_id: d.app_id,
  service: d.service,
  port: d.port,
  redirect_to: d.redirect_to,
});

export const GET: Handler<DomainParams> = async (_req, { env, params }) => json({ domain: await getDomain(env, params.id), proxy: env.edge.proxy.summary() });

/** Reassign to another app service, turn into a redirect (`redirect_to`), or back. */
export const PATCH: Handler<DomainParams, z.infer<typeof patchBody>> = async (_req, { env, params, body, audit }) => {
  const { domain, before, proxy } = await changeDomain(env, params.id, body);
  audit({ action: 'domain.updated', target: params.id, detail: { before: state(before), after: state(domain) } });
  return json({ domain, proxy });
};

export const DELETE: Handler<DomainParams> = async (_req, { env, params, audit }) => {
  const { before, proxy } = await removeDomain(env, params.id);
  audit({ action: 'domain.deleted', target: params.id, detail: { before: state(before) } });
  return json({ id: params.id, deleted: true, proxy });
};
