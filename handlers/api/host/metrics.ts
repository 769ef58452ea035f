import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { hostMetrics } from '../../../lib/series/answer.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

const query = z.object({ range: z.string().max(16).optional() });
export const schema: HandlerModule['schema'] = { query };

/** Every request through the proxy (known hosts or not) and the host's vitals. */
export const GET: Handler<unknown, unknown, z.infer<typeof query>> = async (_req, { env, query }) => json(hostMetrics(env, query));
