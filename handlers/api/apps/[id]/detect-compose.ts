import { getApp } from '#lib/apps/store.js';
import { probeRepository } from '#lib/apps/probe.js';
import { detectionSchema } from '#lib/api/apps.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

export const POST = route(
  {
    permission: 'app.admin',
    summary: "Clone the app's repository and report its compose file, Dockerfile and services",
    params: appParams,
    responses: { 200: detectionSchema },
  },
  async (_req, { env, params, reply }) =>
    reply(200, await probeRepository(env, await getApp(env.db, params.id), 'compose')),
);
