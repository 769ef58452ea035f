import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { deploymentParams, type DeploymentParams } from '../_params.js';

export const schema: HandlerModule['schema'] = { params: deploymentParams };

/** Redeploys the kept images of {did}: no clone, no build, the same blue/green path. */
export const POST: Handler<DeploymentParams> = async (_req, { env, params, audit }) => {
  const app = await getApp(env.db, params.id);
  const deployment = await env.deployments.rollback(app, params.did);
  audit({ action: 'deployment.rollback', target: app.id, detail: { deployment: deployment.id, rollback_of: params.did } });
  return json({ deployment }, 202);
};
