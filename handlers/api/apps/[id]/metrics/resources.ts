import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { queryResources } from '#lib/series/resource-query.js';
import { SERVICE_NAME } from '#lib/compose/index.js';
import { route } from '#lib/http/route.js';
import { resourceHistorySchema } from '#lib/api/alerts.js';
import { appParams } from '../../_lib.js';

/** CPU, memory and restarts per service over a window, from the one-minute rows (kept 30 days). */
export const GET = route(
  {
    permission: 'app.read',
    summary: "The app's resource history: CPU, memory and restarts per service",
    description:
      'Sampled at least every 15 s, kept 30 days in one-minute rows. `from`/`to` are ISO-8601 (default: the last hour, or `range` as for the request metrics); `step` is a multiple of 60 s (default: the smallest giving at most 500 points per service). Steps without a sample are absent.',
    params: appParams,
    query: z.object({
      from: z.string().max(40).optional(),
      to: z.string().max(40).optional(),
      step: z.coerce.number().int().optional(),
      range: z.string().max(16).optional(),
      service: z.string().regex(SERVICE_NAME, 'not a service name').optional(),
    }),
    responses: { 200: resourceHistorySchema },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, queryResources(env.db, params.id, query, env.now()));
  },
);
