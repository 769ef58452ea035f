import { json } from '../../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../../lib/apps/store.js';
import { getRun } from '../../../../../../../lib/backups/store.js';
import { startRestore } from '../../../../../../../lib/backups/run.js';
import type { Handler, HandlerModule } from '../../../../../../../lib/http/handler.js';
import { runParams, type RunParams } from '../../_schemas.js';

export const stepUp: HandlerModule['stepUp'] = ['POST'];
export const schema: HandlerModule['schema'] = { params: runParams };

export const POST: Handler<RunParams> = async (_req, { env, params, principal, audit }) => {
  const app = await getApp(env.db, params.id);
  const run = await getRun(env, params.id, params.rid);
  const restore = await startRestore(env, app, run, { id: principal?.user.id ?? null, name: principal?.user.username ?? null });
  audit({ action: 'backup.restore_started', target: params.id, detail: { run: run.id, restore: restore.id } });
  return json({ restore }, 202);
};
