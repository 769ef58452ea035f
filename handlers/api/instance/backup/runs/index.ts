import { listInstanceRuns } from '#lib/backups/instance.js';
import { route } from '#lib/http/route.js';
import { instanceBackupRunSchema } from '#lib/api/backups.js';
import { items } from '#lib/api/common.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'The runs of the instance backup, newest first',
    responses: { 200: items(instanceBackupRunSchema) },
  },
  async (_req, { env, reply }) => reply(200, { items: await listInstanceRuns(env) }),
);
