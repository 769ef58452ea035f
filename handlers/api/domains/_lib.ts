// Not a route (leading underscore): schemas shared by the domain endpoints.
import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';

export const domainParams = z.object({ id: z.string().regex(ID_PATTERN, 'not a domain id') });
export type DomainParams = z.infer<typeof domainParams>;

// Types only: the hostname rules live in lib/util/hostname.ts so that every refusal names its rule.
const host = z.string().max(2048);
const nullableId = z.string().max(255).nullable();

export const createBody = z.strictObject({
  hostname: host,
  app_id: nullableId.optional(),
  service: nullableId.optional(),
  port: z.number().nullable().optional(),
  redirect_to: host.nullable().optional(),
});

export const patchBody = z.strictObject({
  hostname: host.optional(),
  app_id: nullableId.optional(),
  service: nullableId.optional(),
  port: z.number().nullable().optional(),
  redirect_to: host.nullable().optional(),
});

export const appDomainBody = z.strictObject({
  hostname: host,
  service: z.string().max(255),
  port: z.number().nullable().optional(),
});
