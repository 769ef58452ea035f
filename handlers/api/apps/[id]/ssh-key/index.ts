import { notFound } from '#lib/http/errors.js';
import { getApp } from '#lib/apps/store.js';
import { deleteKey, getPublicKey } from '#lib/keys/store.js';
import { publicKeySchema } from '#lib/api/webhooks.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "The public half of an app's deploy key",
    params: appParams,
    responses: { 200: publicKeySchema },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    const key = await getPublicKey(env.db, params.id);
    if (!key)
      throw notFound('This app has no deploy key: POST /api/apps/{id}/ssh-key/regenerate creates one');
    return reply(200, key);
  },
);

export const DELETE = route(
  {
    permission: 'app.admin',
    summary: "Remove an app's deploy key",
    params: appParams,
    responses: { 204: null },
    audit: { action: 'app.ssh_key_deleted', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    if (!(await deleteKey(env.db, env.config.dataDir, params.id)))
      throw notFound('This app has no deploy key');
    return reply(204);
  },
);
