import { getApp } from '#lib/apps/store.js';
import { cancelRun } from '#lib/jobs/jobs.js';
import { runBody } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { runParams } from '../../jobs/_lib.js';

export const POST = route(
  {
    permission: 'app.deploy',
    summary:
      'Cancel a run: its container is stopped (with its grace period) and removed; 409 when it had ended',
    params: runParams,
    responses: { 200: runBody },
    audit: { action: 'app.run_canceled', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    await getApp(env.db, params.id);
    audit({ detail: { run: params.rid } });
    return reply(200, { run: await cancelRun(env, params.id, params.rid) });
  },
);
