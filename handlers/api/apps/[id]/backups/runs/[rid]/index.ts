import { z } from 'zod';
import { getApp } from '../../../../../../../lib/apps/store.js';
import { getRun, runView } from '../../../../../../../lib/backups/store.js';
import { route } from '../../../../../../../lib/http/route.js';
import { backupRunSchema } from '../../../../../../../lib/api/schemas.js';
import { runParams } from '../../_schemas.js';

export const GET = route({ summary: 'One backup run', params: runParams, responses: { 200: z.object({ run: backupRunSchema }) } }, async (_req, { env, params, reply }) => {
  await getApp(env.db, params.id);
  return reply(200, { run: runView(await getRun(env, params.id, params.rid)) });
});
