import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { getDeployment } from '../../../../../../lib/deploy/index.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { deploymentParams, type DeploymentParams } from '../_params.js';

export const schema: HandlerModule['schema'] = { params: deploymentParams };

export const GET: Handler<DeploymentParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ deployment: await getDeployment(env.db, params.id, params.did) });
};
