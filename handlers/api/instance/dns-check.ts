import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { checkDnsOf } from '../../../lib/domains/ops.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

const query = z.object({ host: z.string().max(2048) });
export const schema: HandlerModule['schema'] = { query };

/** Does `host` resolve to this host? The same check every domain status uses. */
export const GET: Handler<unknown, unknown, z.infer<typeof query>> = async (_req, { env, query }) => json(await checkDnsOf(env, query.host));
