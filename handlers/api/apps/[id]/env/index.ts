import { z } from 'zod';
import { envKeySchema } from '#lib/apps/schemas.js';
import { getApp } from '#lib/apps/store.js';
import { readEnvSet, replaceEnvSet } from '#lib/apps/env.js';
import { envItemSchema } from '#lib/api/apps.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's variables (secret values are null)",
    description:
      'Answers an `ETag` over the set (keys, secret flags, value fingerprints): send it back as `If-Match` to write only what was read.',
    params: appParams,
    responses: { 200: items(envItemSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    const set = await readEnvSet(env.db, env.sealer, params.id);
    return reply(200, { items: set.items }, { etag: set.etag });
  },
);

export const PUT = route(
  {
    permission: 'app.env',
    summary: "Replace an app's variables (value null keeps a stored value)",
    description:
      'With `If-Match`, refused with 412 `precondition_failed` (and nothing changed) when the set changed since that `ETag`.',
    params: appParams,
    body: z.strictObject({
      items: z
        .array(
          z.strictObject({ key: envKeySchema, value: z.string().nullable(), secret: z.boolean().optional() }),
        )
        .max(500),
    }),
    responses: { 200: items(envItemSchema) },
    audit: {
      action: 'app.env_replaced',
      target: (c) => c.params.id,
      state: { kind: 'app_env', id: (c) => c.params.id },
    },
  },
  async (request, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const set = await replaceEnvSet(
      env.db,
      env.sealer,
      params.id,
      body.items,
      request.headers.get('if-match'),
    );
    audit({ detail: { keys: set.items.map((i) => i.key) } });
    return reply(200, { items: set.items }, { etag: set.etag });
  },
);
