import { getApp } from '#lib/apps/store.js';
import { appServices } from '#lib/apps/ops.js';
import { serviceSchema } from '#lib/api/apps.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's services as the engine runs them",
    params: appParams,
    responses: { 200: items(serviceSchema) },
  },
  async (_req, { env, params, reply }) =>
    reply(200, { items: await appServices(env, await getApp(env.db, params.id)) }),
);
