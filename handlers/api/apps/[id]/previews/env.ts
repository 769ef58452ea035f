import { z } from 'zod';
import { envKeySchema } from '#lib/apps/schemas.js';
import { getApp } from '#lib/apps/store.js';
import { listPreviewEnv, replacePreviewEnv } from '#lib/previews/store.js';
import { items } from '#lib/api/common.js';
import { envItemSchema } from '#lib/api/apps.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's preview-only variables (secret values are null)",
    params: appParams,
    responses: { 200: items(envItemSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listPreviewEnv(env.db, env.sealer, params.id) });
  },
);

export const PUT = route(
  {
    permission: 'app.env',
    summary: "Replace an app's preview-only variables (value null keeps a stored value)",
    description:
      'Given to every preview of the app on its next deployment, over the keys it inherits (inherit_env); never to the app itself.',
    params: appParams,
    body: z.strictObject({
      items: z
        .array(
          z.strictObject({ key: envKeySchema, value: z.string().nullable(), secret: z.boolean().optional() }),
        )
        .max(500),
    }),
    responses: { 200: items(envItemSchema) },
    audit: { action: 'app.preview_env_replaced', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const list = await replacePreviewEnv(env.db, env.sealer, params.id, body.items);
    audit({ detail: { keys: list.map((i) => i.key) } });
    return reply(200, { items: list });
  },
);
