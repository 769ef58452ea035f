import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getDeployment, readLogPage } from '#lib/deploy/store.js';
import { logLineSchema } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { deploymentParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "A deployment's log lines in order; page with ?after=<next_after>",
    params: deploymentParams,
    query: z.object({
      after: z.coerce.number().int().min(0).optional(),
      limit: z.coerce.number().int().min(1).max(5000).default(1000),
    }),
    responses: { 200: z.object({ items: z.array(logLineSchema), next_after: z.number().int().optional() }) },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    await getDeployment(env.db, params.id, params.did);
    return reply(200, await readLogPage(env.db, params.did, query));
  },
);
