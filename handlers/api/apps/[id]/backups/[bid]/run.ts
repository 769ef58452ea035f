import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getConfig } from '#lib/backups/store.js';
import { runView } from '#lib/backups/views.js';
import { startRun } from '#lib/backups/run.js';
import { route } from '#lib/http/route.js';
import { backupRunSchema } from '#lib/api/backups.js';
import { configParams } from '../_lib.js';

export const POST = route(
  {
    permission: 'app.backup',
    summary: 'Run a backup now (202: it runs in the background)',
    params: configParams,
    responses: { 202: z.object({ run: backupRunSchema }) },
    audit: { action: 'backup.run_started', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    await getApp(env.db, params.id);
    const run = await startRun(env, await getConfig(env.db, params.id, params.bid), 'manual');
    audit({ detail: { backup: params.bid, run: run.id } });
    return reply(202, { run: runView(run) });
  },
);
