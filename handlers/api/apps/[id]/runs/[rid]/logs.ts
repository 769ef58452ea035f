import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getRunOf } from '#lib/jobs/jobs.js';
import { readRunLogs } from '#lib/jobs/store.js';
import { runLogLineSchema } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { runParams } from '../../jobs/_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "A run's output in order (secret values masked); page with ?after=<next_after>",
    params: runParams,
    query: z.object({
      after: z.coerce.number().int().min(0).optional(),
      limit: z.coerce.number().int().min(1).max(5000).default(1000),
    }),
    responses: {
      200: z.object({ items: z.array(runLogLineSchema), next_after: z.number().int().optional() }),
    },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    await getRunOf(env, params.id, params.rid);
    return reply(200, await readRunLogs(env.db, params.rid, query));
  },
);
