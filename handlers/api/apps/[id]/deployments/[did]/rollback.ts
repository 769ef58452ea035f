import { getApp } from '#lib/apps/store.js';
import { deploymentBody } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { deploymentParams } from '../_lib.js';

/** Redeploys the kept images of {did}: no clone, no build, the same blue/green path. */
export const POST = route(
  {
    permission: 'app.deploy',
    summary: 'Redeploy the images of an earlier deployment (202: queued)',
    params: deploymentParams,
    responses: { 202: deploymentBody },
    audit: { action: 'deployment.rollback', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit, principal }) => {
    const deployment = await env.deployments.rollback(
      await getApp(env.db, params.id),
      params.did,
      principal?.user.username ?? null,
    );
    audit({ detail: { deployment: deployment.id, rollback_of: params.did } });
    return reply(202, { deployment });
  },
);
