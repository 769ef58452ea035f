import { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { removeCertificate, uploadCertificate } from '../../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { domainParams, type DomainParams } from '../_params.js';

// PEM text, bounded: a chain of a few certificates and one key fit well below this.
const pem = z.string().min(1).max(256 * 1024);
const body = z.strictObject({ cert_pem: pem, key_pem: pem });
export const schema: HandlerModule['schema'] = { params: domainParams, body: { POST: body } };

// A private key changes hands: both directions need a recent step-up.
export const stepUp: HandlerModule['stepUp'] = ['POST', 'DELETE'];

/** Replaces ACME for this hostname; refused (400, nothing stored) unless pair, name and validity check out. */
export const POST: Handler<DomainParams, z.infer<typeof body>> = async (_req, { env, params, body, audit }) => {
  const r = await uploadCertificate(env, params.id, body);
  audit({ action: 'domain.certificate_uploaded', target: params.id, detail: { issuer: r.domain.certificate?.issuer, not_after: r.domain.certificate?.not_after } });
  return json(r);
};

/** Back to ACME. */
export const DELETE: Handler<DomainParams> = async (_req, { env, params, audit }) => {
  const r = await removeCertificate(env, params.id);
  audit({ action: 'domain.certificate_removed', target: params.id });
  return json(r);
};
