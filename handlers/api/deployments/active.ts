import { listActive } from '#lib/deploy/store.js';
import { items } from '#lib/api/common.js';
import { deploymentSchema } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { visible } from '#lib/auth/access.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'Non-terminal deployments of every app, oldest first',
    responses: { 200: items(deploymentSchema) },
  },
  async (_req, { env, reply, principal }) =>
    reply(200, { items: visible(principal, await listActive(env.db), (d) => d.app_id) }),
);
