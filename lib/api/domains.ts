// Wire shapes of domains and the automatic hosts under the base domain.
import { z } from 'zod';
import { CERTIFICATE_SOURCES, DOMAIN_STATUSES } from '../domains/status.js';
import { named, ts } from './common.js';

const domainFields = {
  hostname: z.string(),
  status: z.enum(DOMAIN_STATUSES),
  status_detail: z.string(),
  certificate: z
    .object({ source: z.enum(CERTIFICATE_SOURCES), issuer: z.string(), not_after: ts })
    .nullable(),
  dns: z.object({ addresses: z.array(z.string()), points_here: z.boolean(), checked_at: ts }).nullable(),
};

export const domainSchema = named(
  'Domain',
  z.object({
    id: z.string(),
    ...domainFields,
    app_id: z.string().nullable(),
    service: z.string().nullable(),
    port: z.number().int().nullable(),
    redirect_to: z.string().nullable(),
    created_at: ts,
    updated_at: ts,
  }),
  'A domain: the app service it serves or the URL it redirects to, its DNS and certificate',
);

export const automaticHostSchema = named(
  'AutomaticHost',
  z.object({
    managed: z.literal(true),
    ...domainFields,
    app_id: z.string(),
    service: z.string(),
    port: z.number().int(),
    redirect_to: z.null(),
  }),
  'A host under the base domain given to every app service automatically (no id: it follows the app)',
);

export const domainListItemSchema = z.union([domainSchema, automaticHostSchema]);
