import { listEngines } from '#lib/databases/engines/index.js';
import { route } from '#lib/http/route.js';
import { items } from '#lib/api/common.js';
import { databaseEngineSchema } from '#lib/api/databases.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'The database engines that can be provisioned',
    responses: { 200: items(databaseEngineSchema) },
  },
  (_req, { reply }) => reply(200, { items: listEngines() }),
);
