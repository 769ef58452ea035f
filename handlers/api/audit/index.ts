import { z } from 'zod';
import { listAudit } from '../../../lib/audit/index.js';
import { auditEntrySchema, page } from '../../../lib/api/schemas.js';
import { route } from '../../../lib/http/route.js';

const iso = z.iso.datetime({ offset: false, message: 'an ISO-8601 UTC timestamp' });

export const GET = route(
  {
    summary: 'The audit feed, newest first (filter by actor, action prefix, target, time)',
    query: z.object({
      cursor: z.string().regex(/^\d{1,15}$/, 'a cursor from next_cursor').transform(Number).optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
      actor: z.string().min(1).max(128).optional(),
      action: z.string().min(1).max(128).optional(),
      target: z.string().min(1).max(256).optional(),
      since: iso.optional(),
      until: iso.optional(),
    }),
    responses: { 200: page(auditEntrySchema) },
  },
  async (_req, { env, query, reply }) => reply(200, await listAudit(env.db, query)),
);
