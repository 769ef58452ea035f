import { getApp } from '#lib/apps/store.js';
import { exportSpec } from '#lib/appspec/spec.js';
import { appSpecSchema } from '#lib/api/apps.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'The portable spec of an app (no secret values)',
    params: appParams,
    responses: { 200: appSpecSchema },
  },
  async (_req, { env, params, reply }) => reply(200, await exportSpec(env, await getApp(env.db, params.id))),
);
