import { z } from 'zod';
import { hostMetrics } from '#lib/series/answer.js';
import { route } from '#lib/http/route.js';
import { hostMetricsSchema } from '#lib/api/metrics.js';

/** Every request through the proxy (known hosts or not) and the host's vitals. */
export const GET = route(
  {
    permission: 'instance.read',
    summary: "Every request through the proxy (known hosts or not) and the host's vitals",
    query: z.object({ range: z.string().max(16).optional() }),
    responses: { 200: hostMetricsSchema },
  },
  async (_req, { env, query, reply }) => reply(200, hostMetrics(env, query)),
);
