import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { removeEnvVar, setEnvVar } from '#lib/apps/env.js';
import { envItemSchema } from '#lib/api/apps.js';
import { route } from '#lib/http/route.js';
import { envKeyParams } from '../../../_lib.js';

const IF_MATCH =
  'With `If-Match`, refused with 412 `precondition_failed` (and nothing changed) when the set changed since that `ETag`.';

export const PUT = route(
  {
    permission: 'app.env',
    summary: 'Set one variable (201 when created, 200 when replaced; a secret answers value null)',
    description: `\`secret\` defaults to the stored key's flag, or true for a new key. ${IF_MATCH}`,
    params: envKeyParams,
    body: z.strictObject({ value: z.string(), secret: z.boolean().optional() }),
    responses: { 200: envItemSchema, 201: envItemSchema },
    audit: {
      action: 'app.env_set',
      target: (c) => c.params.id,
      state: { kind: 'app_env', id: (c) => c.params.id },
    },
  },
  async (request, { env, params, body, reply, audit }) => {
    audit({ detail: { key: params.key } });
    await getApp(env.db, params.id);
    const r = await setEnvVar(
      env.db,
      env.sealer,
      params.id,
      { key: params.key, ...body },
      request.headers.get('if-match'),
    );
    return r.created ? reply(201, r.item, { etag: r.etag }) : reply(200, r.item, { etag: r.etag });
  },
);

export const DELETE = route(
  {
    permission: 'app.env',
    summary: 'Remove one variable (404 when the app has no such key)',
    description: IF_MATCH,
    params: envKeyParams,
    responses: { 204: null },
    audit: {
      action: 'app.env_removed',
      target: (c) => c.params.id,
      state: { kind: 'app_env', id: (c) => c.params.id },
    },
  },
  async (request, { env, params, reply, audit }) => {
    audit({ detail: { key: params.key } });
    await getApp(env.db, params.id);
    const etag = await removeEnvVar(
      env.db,
      env.sealer,
      params.id,
      params.key,
      request.headers.get('if-match'),
    );
    return reply(204, null, { etag });
  },
);
