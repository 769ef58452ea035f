import type { z } from 'zod';
import { json, noContent } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { deleteConfig } from '../../../../../../lib/backups/index.js';
import { configView, getConfig, updateConfig } from '../../../../../../lib/backups/store.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { configParams, patchBody, type ConfigParams } from '../_schemas.js';

export const stepUp: HandlerModule['stepUp'] = ['DELETE'];
export const schema: HandlerModule['schema'] = { params: configParams, body: { PATCH: patchBody } };

export const GET: Handler<ConfigParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ backup: await configView(env, await getConfig(env, params.id, params.bid)) });
};

export const PATCH: Handler<ConfigParams, z.infer<typeof patchBody>> = async (_req, { env, params, body, audit }) => {
  await getApp(env.db, params.id);
  const row = await updateConfig(env, params.id, params.bid, body);
  audit({ action: 'backup.config_updated', target: params.id, detail: { backup: row.id, fields: Object.keys(body) } });
  return json({ backup: await configView(env, row) });
};

export const DELETE: Handler<ConfigParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  audit({ action: 'backup.config_deleted', target: params.id, detail: { backup: params.bid } });
  await deleteConfig(env, params.id, params.bid);
  return noContent();
};
