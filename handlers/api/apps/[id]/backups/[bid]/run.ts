import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { getConfig, runView } from '../../../../../../lib/backups/store.js';
import { startRun } from '../../../../../../lib/backups/run.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { configParams, type ConfigParams } from '../_schemas.js';

export const schema: HandlerModule['schema'] = { params: configParams };

export const POST: Handler<ConfigParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  const run = await startRun(env, await getConfig(env, params.id, params.bid), 'manual');
  audit({ action: 'backup.run_started', target: params.id, detail: { backup: params.bid, run: run.id } });
  return json({ run: runView(run) }, 202);
};
