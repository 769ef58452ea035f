import { json } from '../../../../lib/http/respond.js';
import { refreshDomain } from '../../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { domainParams, type DomainParams } from '../_params.js';

export const schema: HandlerModule['schema'] = { params: domainParams };

/** DNS and the served certificate checked now, and the proxy brought in line. */
export const POST: Handler<DomainParams> = async (_req, { env, params }) => json(await refreshDomain(env, params.id));
