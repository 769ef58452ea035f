import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { listRuns } from '../../../../../../lib/backups/index.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { configParams, type ConfigParams } from '../_schemas.js';

export const schema: HandlerModule['schema'] = { params: configParams };

export const GET: Handler<ConfigParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ items: await listRuns(env, params.id, params.bid) });
};
