import { json } from '../../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../../lib/apps/store.js';
import { getRun, runView } from '../../../../../../../lib/backups/store.js';
import type { Handler, HandlerModule } from '../../../../../../../lib/http/handler.js';
import { runParams, type RunParams } from '../../_schemas.js';

export const schema: HandlerModule['schema'] = { params: runParams };

export const GET: Handler<RunParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ run: runView(await getRun(env, params.id, params.rid)) });
};
