import { getApp } from '#lib/apps/store.js';
import { regenerateKey } from '#lib/keys/store.js';
import { publicKeySchema } from '#lib/api/webhooks.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Make a new deploy key (the old one stops working)',
    params: appParams,
    responses: { 201: publicKeySchema },
    audit: { action: 'app.ssh_key_regenerated', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const key = await regenerateKey(env.db, env.sealer, await getApp(env.db, params.id), env.now());
    audit({ detail: { fingerprint: key.fingerprint } });
    return reply(201, key);
  },
);
