import { getApp } from '#lib/apps/store.js';
import { deploymentBody } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { deploymentParams } from '../_lib.js';

/** Stops the in-flight step and cleans up; answers once the deployment is canceled (or 409 if it had finished). */
export const POST = route(
  {
    permission: 'app.deploy',
    summary: 'Cancel a deployment (409 when it already finished)',
    params: deploymentParams,
    responses: { 200: deploymentBody },
    audit: { action: 'deployment.canceled', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    audit({ detail: { deployment: params.did } });
    return reply(200, {
      deployment: await env.deployments.cancel(await getApp(env.db, params.id), params.did),
    });
  },
);
