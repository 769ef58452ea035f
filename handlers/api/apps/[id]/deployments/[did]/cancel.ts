import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { deploymentParams, type DeploymentParams } from '../_params.js';

export const schema: HandlerModule['schema'] = { params: deploymentParams };

/** Stops the in-flight step and cleans up; answers once the deployment is canceled (or 409 if it had finished). */
export const POST: Handler<DeploymentParams> = async (_req, { env, params, audit }) => {
  const app = await getApp(env.db, params.id);
  audit({ action: 'deployment.canceled', target: app.id, detail: { deployment: params.did } });
  return json({ deployment: await env.deployments.cancel(app, params.did) });
};
