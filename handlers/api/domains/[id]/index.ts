import { domainAppId } from '#lib/domains/store.js';
import { z } from 'zod';
import { changeDomain, getDomain, removeDomain } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { domainSchema } from '#lib/api/domains.js';
import { proxySummarySchema } from '#lib/api/instance.js';
import { domainParams, patchBody } from '../_lib.js';

const state = (d: {
  hostname: string;
  app_id: string | null;
  service: string | null;
  port: number | null;
  redirect_to: string | null;
}) => ({
  hostname: d.hostname,
  app_id: d.app_id,
  service: d.service,
  port: d.port,
  redirect_to: d.redirect_to,
});
const one = z.object({ domain: domainSchema, proxy: proxySummarySchema });

export const GET = route(
  {
    permission: 'app.read',
    app: (env, p) => domainAppId(env.db, p.id!),
    summary: 'One domain',
    params: domainParams,
    responses: { 200: one },
  },
  async (_req, { env, params, reply }) =>
    reply(200, { domain: await getDomain(env, params.id), proxy: env.edge.proxy.summary() }),
);

/** Reassign to another app service, turn into a redirect (`redirect_to`), or back. */
export const PATCH = route(
  {
    permission: 'app.admin',
    app: (env, p) => domainAppId(env.db, p.id!),
    summary: 'Reassign a domain to another app service, or turn it into a redirect (or back)',
    params: domainParams,
    body: patchBody,
    responses: { 200: one },
    audit: {
      action: 'domain.updated',
      target: (c) => c.params.id,
      state: { kind: 'domain', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit, permit }) => {
    // Moving a domain to another app acts on that app too; turning it into a redirect moves it out of every app.
    if (body.app_id) permit('app.admin', body.app_id);
    else if (body.app_id === null || (body.redirect_to != null && body.app_id === undefined))
      permit('app.admin', null);
    const { domain, before, proxy } = await changeDomain(env, params.id, body);
    audit({ detail: { before: state(before), after: state(domain) } });
    return reply(200, { domain, proxy });
  },
);

export const DELETE = route(
  {
    permission: 'app.admin',
    app: (env, p) => domainAppId(env.db, p.id!),
    summary: 'Delete a domain',
    params: domainParams,
    responses: { 200: z.object({ id: z.string(), deleted: z.literal(true), proxy: proxySummarySchema }) },
    audit: {
      action: 'domain.deleted',
      target: (c) => c.params.id,
      state: { kind: 'domain', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, reply, audit }) => {
    const { before, proxy } = await removeDomain(env, params.id);
    audit({ detail: { before: state(before) } });
    return reply(200, { id: params.id, deleted: true, proxy });
  },
);
