import { z } from 'zod';
import { instanceRunView } from '#lib/backups/instance.js';
import { startInstanceRun } from '#lib/backups/instance-run.js';
import { route } from '#lib/http/route.js';
import { instanceBackupRunSchema } from '#lib/api/backups.js';

export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Back up the instance now (202: it runs in the background)',
    responses: { 202: z.object({ run: instanceBackupRunSchema }) },
    audit: { action: 'instance.backup_run_started' },
  },
  async (_req, { env, reply, audit }) => {
    const run = await startInstanceRun(env, 'manual');
    audit({ detail: { run: run.id } });
    return reply(202, { run: instanceRunView(run) });
  },
);
