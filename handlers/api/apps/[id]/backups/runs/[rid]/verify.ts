import { json } from '../../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../../lib/apps/store.js';
import { getRun, runView } from '../../../../../../../lib/backups/store.js';
import { startVerify } from '../../../../../../../lib/backups/run.js';
import type { Handler, HandlerModule } from '../../../../../../../lib/http/handler.js';
import { runParams, type RunParams } from '../../_schemas.js';

export const schema: HandlerModule['schema'] = { params: runParams };

export const POST: Handler<RunParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  const run = await getRun(env, params.id, params.rid);
  await startVerify(env, run);
  audit({ action: 'backup.verify_started', target: params.id, detail: { run: run.id } });
  return json({ run: runView(run) }, 202);
};
