import { listDatabases } from '../../../lib/databases/index.js';
import { route } from '../../../lib/http/route.js';
import { databaseSchema, items } from '../../../lib/api/schemas.js';

/** The fleet's databases with their volumes' sizes on disk. */
export const GET = route({ summary: "The fleet's managed databases with their volumes' sizes", responses: { 200: items(databaseSchema) } }, async (_req, { env, reply }) =>
  reply(200, { items: await listDatabases(env, null, true) }),
);
