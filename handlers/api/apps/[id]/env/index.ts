import { z } from 'zod';
import { envKeySchema } from '../../../../../lib/apps/schemas.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { listEnv, replaceEnv } from '../../../../../lib/apps/env.js';
import { envItemSchema, items } from '../../../../../lib/api/schemas.js';
import { route } from '../../../../../lib/http/route.js';
import { appParams } from '../../_shared.js';

export const GET = route({ summary: "An app's variables (secret values are null)", params: appParams, responses: { 200: items(envItemSchema) } }, async (_req, { env, params, reply }) => {
  await getApp(env.db, params.id);
  return reply(200, { items: await listEnv(env.db, env.sealer, params.id) });
});

export const PUT = route(
  {
    summary: "Replace an app's variables (value null keeps a stored value)",
    params: appParams,
    body: z.strictObject({
      items: z.array(z.strictObject({ key: envKeySchema, value: z.string().nullable(), secret: z.boolean().optional() })).max(500),
    }),
    responses: { 200: items(envItemSchema) },
    audit: { action: 'app.env_replaced', target: (c) => c.params.id, state: { kind: 'app_env', id: (c) => c.params.id } },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const replaced = await replaceEnv(env.db, env.sealer, params.id, body.items);
    audit({ detail: { keys: replaced.map((i) => i.key) } });
    return reply(200, { items: replaced });
  },
);
