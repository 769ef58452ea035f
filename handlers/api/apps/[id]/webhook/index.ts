import { z } from 'zod';
import { notFound } from '#lib/http/errors.js';
import { getApp } from '#lib/apps/store.js';
import { removeWebhookSecret, webhookInfo, PROVIDERS } from '#lib/webhooks/store.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "Where an app's forge sends its pushes, and whether a secret is set",
    params: appParams,
    responses: {
      200: z.object({
        url: z.string(),
        url_hint: z.string().optional(),
        secret_set: z.boolean(),
        providers: z.array(z.enum(PROVIDERS)),
      }),
    },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, await webhookInfo(env.db, env.config, params.id));
  },
);

export const DELETE = route(
  {
    permission: 'app.triggers',
    summary: "Remove an app's webhook secret (deliveries are refused until a new one is made)",
    params: appParams,
    responses: { 204: null },
    audit: { action: 'app.webhook_removed', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    if (!(await removeWebhookSecret(env.db, params.id))) throw notFound('No webhook secret is set');
    return reply(204);
  },
);
