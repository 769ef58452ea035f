import { json, noContent } from '../../../../../lib/http/respond.js';
import { notFound } from '../../../../../lib/http/errors.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { deleteKey, getPublicKey } from '../../../../../lib/keys/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  const key = await getPublicKey(env.db, params.id);
  if (!key) throw notFound('This app has no deploy key: POST /api/apps/{id}/ssh-key/regenerate creates one');
  return json(key);
};

export const DELETE: Handler<AppParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  audit({ action: 'app.ssh_key_deleted', target: params.id });
  if (!(await deleteKey(env.db, env.config.dataDir, params.id))) throw notFound('This app has no deploy key');
  return noContent();
};
