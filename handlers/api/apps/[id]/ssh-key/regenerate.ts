import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { regenerateKey } from '../../../../../lib/keys/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

export const POST: Handler<AppParams> = async (_req, { env, params, audit }) => {
  const app = await getApp(env.db, params.id);
  const key = await regenerateKey(env.db, env.sealer, app, env.now());
  audit({ action: 'app.ssh_key_regenerated', target: params.id, detail: { fingerprint: key.fingerprint } });
  return json(key, 201);
};
