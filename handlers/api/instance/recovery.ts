import { z } from 'zod';
import { recoveryReportFor } from '#lib/instance/recovery.js';
import { notFound } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';

const report = z.object({
  started_at: z.string(),
  finished_at: z.string().nullable().describe('null while the recovery runs'),
  items: z.array(
    z.object({
      kind: z.enum(['database', 'app']),
      id: z.string(),
      name: z.string(),
      outcome: z.enum(['restored', 'redeployed', 'failed', 'skipped']),
      detail: z.string(),
    }),
  ),
});

export const GET = route(
  {
    permission: 'instance.read',
    summary:
      'What the recovery after `svc restore-instance` brought back, and what it could not (404: none ran); a caller limited to some apps sees their items only',
    responses: { 200: report },
  },
  async (_req, { env, reply, principal }) => {
    // A caller limited to some apps reads the items of those apps only.
    const r = await recoveryReportFor(env, principal?.appIds ?? null);
    if (!r) throw notFound('No recovery has run on this instance');
    return reply(200, r);
  },
);
