import { overview } from '#lib/backups/index.js';
import { route } from '#lib/http/route.js';
import { visible } from '#lib/auth/access.js';
import { backupsOverviewSchema } from '#lib/api/backups.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'Backups across the fleet: configurations, recent failures, what is not covered',
    responses: { 200: backupsOverviewSchema },
  },
  async (_req, { env, reply, principal }) => {
    const o = await overview(env);
    const app = (x: { app_id: string }) => x.app_id;
    return reply(200, {
      configs: visible(principal, o.configs, app),
      failed_last_7d: visible(principal, o.failed_last_7d, app),
      uncovered: visible(principal, o.uncovered, app),
    });
  },
);
