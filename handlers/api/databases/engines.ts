import { listEngines } from '../../../lib/databases/catalog.js';
import { route } from '../../../lib/http/route.js';
import { databaseEngineSchema, items } from '../../../lib/api/schemas.js';

export const GET = route({ permission: 'app.read', summary: 'The database engines that can be provisioned', responses: { 200: items(databaseEngineSchema) } }, (_req, { reply }) =>
  reply(200, { items: listEngines() }),
);
