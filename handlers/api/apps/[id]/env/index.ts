import { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { envKeySchema } from '../../../../../lib/apps/schemas.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { listEnv, replaceEnv } from '../../../../../lib/apps/env.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

const body = z.strictObject({
  items: z.array(z.strictObject({ key: envKeySchema, value: z.string().nullable(), secret: z.boolean().optional() })).max(500),
});
export const schema: HandlerModule['schema'] = { params: appParams, body: { PUT: body } };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ items: await listEnv(env.db, env.sealer, params.id) });
};

export const PUT: Handler<AppParams, z.infer<typeof body>> = async (_req, { env, params, body, audit }) => {
  await getApp(env.db, params.id);
  const items = await replaceEnv(env.db, env.sealer, params.id, body.items);
  audit({ action: 'app.env_replaced', target: params.id, detail: { keys: items.map((i) => i.key) } });
  return json({ items });
};
