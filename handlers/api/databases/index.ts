import { listDatabases } from '#lib/databases/index.js';
import { route } from '#lib/http/route.js';
import { visible } from '#lib/auth/access.js';
import { items } from '#lib/api/common.js';
import { databaseSchema } from '#lib/api/databases.js';

/** The fleet's databases with their volumes' sizes on disk. */
export const GET = route(
  {
    permission: 'app.read',
    summary: "The fleet's managed databases with their volumes' sizes",
    responses: { 200: items(databaseSchema) },
  },
  async (_req, { env, reply, principal }) =>
    reply(200, { items: visible(principal, await listDatabases(env, null, true), (d) => d.app_id) }),
);
