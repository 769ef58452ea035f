import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { appMetrics } from '#lib/series/answer.js';
import { SERVICE_NAME } from '#lib/compose/index.js';
import { route } from '#lib/http/route.js';
import { metricsSeriesSchema } from '#lib/api/metrics.js';
import { appParams } from '../_lib.js';

/** Requests through the proxy to this app (or one service): oldest first, zero-filled, at most 500 points. */
export const GET = route(
  {
    permission: 'app.read',
    summary: 'Requests through the proxy to this app (or one service)',
    params: appParams,
    // `range` is checked by lib/series (its 400 lists the ranges there are).
    query: z.object({
      range: z.string().max(16).optional(),
      service: z.string().regex(SERVICE_NAME, 'not a service name').optional(),
    }),
    responses: { 200: metricsSeriesSchema },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, appMetrics(env, params.id, query));
  },
);
