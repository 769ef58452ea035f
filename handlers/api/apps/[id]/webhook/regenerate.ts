import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { rotateWebhookSecret } from '#lib/webhooks/store.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

// The only time the secret is shown: it is sealed at rest and never listed.
export const POST = route(
  {
    permission: 'app.triggers',
    summary: 'Make a new webhook secret (shown only in this answer)',
    params: appParams,
    responses: { 200: z.object({ secret: z.string() }) },
    audit: { action: 'app.webhook_secret_rotated', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { secret: await rotateWebhookSecret(env.db, env.sealer, params.id, env.now()) });
  },
);
