import { getApp } from '#lib/apps/store.js';
import { listRuns } from '#lib/backups/index.js';
import { route } from '#lib/http/route.js';
import { backupRunSchema } from '#lib/api/backups.js';
import { items } from '#lib/api/common.js';
import { configParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'The runs of a backup configuration',
    params: configParams,
    responses: { 200: items(backupRunSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listRuns(env, params.id, params.bid) });
  },
);
