import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getRestore } from '#lib/backups/store.js';
import { restoreView } from '#lib/backups/views.js';
import { route } from '#lib/http/route.js';
import { restoreSchema } from '#lib/api/backups.js';
import { restoreParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One restore and how it went',
    params: restoreParams,
    responses: { 200: z.object({ restore: restoreSchema }) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { restore: restoreView(await getRestore(env.db, params.id, params.xid)) });
  },
);
