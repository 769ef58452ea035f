import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { testDeployKey } from '#lib/keys/store.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

// Runs `git ls-remote` with the app's key against its repository; the forge's words come back cleaned.
export const POST = route(
  {
    permission: 'app.deploy',
    summary: "Try the deploy key against the app's repository",
    params: appParams,
    responses: { 200: z.object({ ok: z.boolean(), message: z.string() }) },
    audit: { action: 'app.ssh_key_tested', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const result = await testDeployKey(env, await getApp(env.db, params.id));
    audit({ detail: { ok: result.ok } });
    return reply(200, result);
  },
);
