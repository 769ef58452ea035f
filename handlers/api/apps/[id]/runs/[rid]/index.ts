import { getApp } from '#lib/apps/store.js';
import { getRunOf } from '#lib/jobs/jobs.js';
import { runBody } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { runParams } from '../../jobs/_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One run: its status, exit code and why it ended as it did',
    params: runParams,
    responses: { 200: runBody },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { run: await getRunOf(env, params.id, params.rid) });
  },
);
