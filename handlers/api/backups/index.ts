import { overview } from '../../../lib/backups/index.js';
import { route } from '../../../lib/http/route.js';
import { backupsOverviewSchema } from '../../../lib/api/schemas.js';

export const GET = route({ summary: 'Backups across the fleet: configurations, recent failures, what is not covered', responses: { 200: backupsOverviewSchema } }, async (_req, { env, reply }) =>
  reply(200, await overview(env)),
);
