import { z } from 'zod';
import { listEvents } from '#lib/alerts/store.js';
import { alertEventSchema } from '#lib/api/alerts.js';
import { page } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'The history of alert rules: every time one fired or resolved, newest first',
    query: z.object({
      rule_id: z.string().min(1).max(64).optional(),
      cursor: z
        .string()
        .regex(/^\d{1,15}$/, 'a cursor from a previous page')
        .optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
    }),
    responses: { 200: page(alertEventSchema) },
  },
  async (_req, { env, query, principal, reply }) => {
    const rows = await listEvents(env.db, {
      ruleId: query.rule_id,
      appIds: principal?.appIds ?? null,
      before: query.cursor !== undefined ? Number(query.cursor) : undefined,
      limit: query.limit + 1,
    });
    const items = rows.slice(0, query.limit);
    return reply(200, rows.length > query.limit ? { items, next_cursor: items.at(-1)!.id } : { items });
  },
);
