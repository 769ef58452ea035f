import { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { createDatabase, listDatabases } from '../../../../../lib/databases/index.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

const body = z.strictObject({ engine: z.string().max(40), version: z.string().max(40).optional(), env_var: z.string().max(200).optional() });
export const schema: HandlerModule['schema'] = { params: appParams, body: { POST: body } };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ items: await listDatabases(env, params.id, true) });
};

export const POST: Handler<AppParams, z.infer<typeof body>> = async (_req, { env, params, body, audit }) => {
  const app = await getApp(env.db, params.id);
  const database = await createDatabase(env, app, body, (p) => void p);
  audit({ action: 'database.created', target: params.id, detail: { database: database.id, engine: database.engine, version: database.version, env_var: database.env_var } });
  return json({ database }, 202);
};
