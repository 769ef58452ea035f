import { z } from 'zod';
import { getInstanceRun, instanceRunView } from '#lib/backups/instance.js';
import { removeInstanceRunArtifact } from '#lib/backups/retention.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { route } from '#lib/http/route.js';
import { instanceBackupRunSchema } from '#lib/api/backups.js';

const params = z.object({ rid: z.string().regex(ID_PATTERN, 'not a run id') });
const one = z.object({ run: instanceBackupRunSchema });

export const GET = route(
  { permission: 'instance.read', summary: 'One run of the instance backup', params, responses: { 200: one } },
  async (_req, { env, params, reply }) =>
    reply(200, { run: instanceRunView(await getInstanceRun(env, params.rid)) }),
);

export const DELETE = route(
  {
    permission: 'instance.admin',
    summary: "Remove a run's artifact (the run stays, marked removed)",
    stepUp: true,
    description: 'The run stays, marked removed. 409 while the run is running.',
    params,
    responses: { 204: null },
    audit: { action: 'instance.backup_run_removed' },
  },
  async (_req, { env, params, reply, audit }) => {
    const run = await removeInstanceRunArtifact(env, params.rid);
    audit({ detail: { run: run.id } });
    return reply(204);
  },
);
