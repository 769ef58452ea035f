import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getRun } from '#lib/backups/store.js';
import { runView } from '#lib/backups/views.js';
import { startVerify } from '#lib/backups/verify.js';
import { route } from '#lib/http/route.js';
import { backupRunSchema } from '#lib/api/backups.js';
import { runParams } from '../../_lib.js';

export const POST = route(
  {
    permission: 'app.backup',
    summary: 'Verify a backup run by restoring it into a scratch container',
    params: runParams,
    responses: { 202: z.object({ run: backupRunSchema }) },
    audit: { action: 'backup.verify_started', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    await getApp(env.db, params.id);
    const run = await getRun(env.db, params.id, params.rid);
    await startVerify(env, run);
    audit({ detail: { run: run.id } });
    return reply(202, { run: runView(run) });
  },
);
