import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { probeRepository } from '#lib/apps/probe.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

export const POST = route(
  {
    permission: 'app.env',
    summary: "Variables named by the repository's .env.example",
    params: appParams,
    responses: { 200: items(z.object({ key: z.string(), value: z.string() })) },
  },
  async (_req, { env, params, reply }) =>
    reply(200, await probeRepository(env, await getApp(env.db, params.id), 'env-example')),
);
