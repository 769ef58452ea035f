import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getRun } from '#lib/backups/store.js';
import { startRestore } from '#lib/backups/restore.js';
import { route } from '#lib/http/route.js';
import { restoreSchema } from '#lib/api/backups.js';
import { runParams } from '../../_lib.js';

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Restore a backup run into its source (stops the services using it, starts them after)',
    stepUp: true,
    params: runParams,
    responses: { 202: z.object({ restore: restoreSchema }) },
    audit: { action: 'backup.restore_started', target: (c) => c.params.id },
  },
  async (_req, { env, params, principal, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    const run = await getRun(env.db, params.id, params.rid);
    const restore = await startRestore(env, app, run, {
      id: principal?.user.id ?? null,
      name: principal?.user.username ?? null,
    });
    audit({ detail: { run: run.id, restore: restore.id } });
    return reply(202, { restore });
  },
);
