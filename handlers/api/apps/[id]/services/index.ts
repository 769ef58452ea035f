import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { appServices } from '../../../../../lib/apps/ops.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  const app = await getApp(env.db, params.id);
  return json({ items: await appServices(env, app) });
};
