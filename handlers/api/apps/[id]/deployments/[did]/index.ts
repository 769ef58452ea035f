import { getApp } from '#lib/apps/store.js';
import { getDeployment } from '#lib/deploy/store.js';
import { deploymentBody } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { deploymentParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One deployment',
    params: deploymentParams,
    responses: { 200: deploymentBody },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { deployment: await getDeployment(env.db, params.id, params.did) });
  },
);
