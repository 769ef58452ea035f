import { z } from 'zod';
import { listAudit } from '#lib/audit/index.js';
import { auditEntrySchema } from '#lib/api/audit.js';
import { page } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';

const iso = z.iso.datetime({ offset: false, message: 'an ISO-8601 UTC timestamp' });

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'The audit feed, newest first (filter by actor, action prefix, target, time)',
    query: z.object({
      cursor: z
        .string()
        .regex(/^\d{1,15}$/, 'a cursor from next_cursor')
        .transform(Number)
        .optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
      actor: z
        .string()
        .min(1)
        .max(128)
        .optional()
        .describe(
          "The actor's name or id (a token's name or id); an operator's username also finds what their tokens did",
        ),
      action: z
        .string()
        .min(1)
        .max(128)
        .optional()
        .describe(
          'A prefix of the action (`PUT /api/apps/{id}/env`, `DELETE `), of its path (`/api/domains`), or of the event (`auth.`)',
        ),
      target: z.string().min(1).max(256).optional().describe("The target's id"),
      since: iso.optional().describe('Entries at or after this time'),
      until: iso.optional().describe('Entries at or before this time'),
    }),
    responses: { 200: page(auditEntrySchema) },
  },
  async (_req, { env, query, reply, principal }) =>
    reply(200, await listAudit(env.db, { ...query, apps: principal?.appIds ?? null })),
);
