import { domainAppId } from '#lib/domains/store.js';
import { z } from 'zod';
import { removeCertificate, uploadCertificate } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';
import { domainSchema } from '#lib/api/domains.js';
import { proxySummarySchema } from '#lib/api/instance.js';
import { domainParams } from '../_lib.js';

// PEM text, bounded: a chain of a few certificates and one key fit well below this.
const pem = z
  .string()
  .min(1)
  .max(256 * 1024);
const answer = z.looseObject({ domain: domainSchema, proxy: proxySummarySchema.optional() });

// A private key changes hands: both directions need a recent step-up.

/** Replaces ACME for this hostname; refused (400, nothing stored) unless pair, name and validity check out. */
export const POST = route(
  {
    permission: 'app.admin',
    app: (env, p) => domainAppId(env.db, p.id!),
    summary: 'Upload a certificate for a domain (replaces ACME for it)',
    stepUp: true,
    params: domainParams,
    body: z.strictObject({ cert_pem: pem, key_pem: pem }),
    responses: { 200: answer },
    audit: {
      action: 'domain.certificate_uploaded',
      target: (c) => c.params.id,
      state: { kind: 'domain', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const r = await uploadCertificate(env, params.id, body);
    audit({ detail: { issuer: r.domain.certificate?.issuer, not_after: r.domain.certificate?.not_after } });
    return reply(200, r);
  },
);

/** Back to ACME. */
export const DELETE = route(
  {
    permission: 'app.admin',
    app: (env, p) => domainAppId(env.db, p.id!),
    summary: 'Remove an uploaded certificate (back to ACME)',
    stepUp: true,
    params: domainParams,
    responses: { 200: answer },
    audit: {
      action: 'domain.certificate_removed',
      target: (c) => c.params.id,
      state: { kind: 'domain', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, reply }) => reply(200, await removeCertificate(env, params.id)),
);
