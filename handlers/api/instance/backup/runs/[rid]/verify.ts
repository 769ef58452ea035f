import { z } from 'zod';
import { getInstanceRun, instanceRunView } from '#lib/backups/instance.js';
import { startInstanceVerify } from '#lib/backups/instance-verify.js';
import { instanceBackupRunSchema } from '#lib/api/backups.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { route } from '#lib/http/route.js';

const params = z.object({ rid: z.string().regex(ID_PATTERN, 'not a run id') });

export const POST = route(
  {
    permission: 'instance.admin',
    summary: "Verify a run's artifact again (202): fetched once, authenticated, its database copy checked",
    description: "The run's verified_at (or verify_error) says how it went.",
    params,
    responses: { 202: z.object({ run: instanceBackupRunSchema }) },
    audit: { action: 'instance.backup_verify_started' },
  },
  async (_req, { env, params, reply, audit }) => {
    await startInstanceVerify(env, params.rid);
    audit({ detail: { run: params.rid } });
    return reply(202, { run: instanceRunView(await getInstanceRun(env, params.rid)) });
  },
);
