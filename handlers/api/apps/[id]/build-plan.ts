import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { previewBuildPlan } from '#lib/deploy/generated.js';
import { buildPlanSchema } from '#lib/api/apps.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

export const GET = route(
  {
    summary:
      'What a deploy of a ref would build from source: the detected stack, its commands and the generated Dockerfile',
    description:
      'Clones the ref into a temporary directory (removed afterwards). 422 not_detectable names what was looked for; ' +
      '409 when the ref builds its own Dockerfile or compose file.',
    permission: 'app.read',
    params: appParams,
    query: z.object({
      ref: z.string().max(255).optional().describe("Branch or tag; default: the app's branch"),
    }),
    responses: { 200: buildPlanSchema },
  },
  async (_req, { env, params, query, reply }) =>
    reply(200, await previewBuildPlan(env, await getApp(env.db, params.id), query.ref)),
);
