import { listActive } from '../../../lib/deploy/store.js';
import { deploymentSchema, items } from '../../../lib/api/schemas.js';
import { route } from '../../../lib/http/route.js';

export const GET = route({ summary: 'Non-terminal deployments of every app, oldest first', responses: { 200: items(deploymentSchema) } }, async (_req, { env, reply }) =>
  reply(200, { items: await listActive(env.db) }),
);
