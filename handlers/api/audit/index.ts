import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { listAudit } from '../../../lib/audit/index.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

const query = z.object({
  cursor: z.string().regex(/^\d{1,15}$/, 'a cursor from next_cursor').transform(Number).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export const schema: HandlerModule['schema'] = { query };

export const GET: Handler<{}, unknown, z.infer<typeof query>> = async (_req, { env, query }) => json(await listAudit(env.db, query));
