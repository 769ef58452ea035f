import { getApp } from '#lib/apps/store.js';
import { listDeliveryLog } from '#lib/webhooks/deliveries-store.js';
import { items } from '#lib/api/common.js';
import { webhookDeliverySchema } from '#lib/api/webhooks.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "The last 50 deliveries to an app's webhook, newest first, and what each came to",
    params: appParams,
    responses: { 200: items(webhookDeliverySchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listDeliveryLog(env.db, params.id) });
  },
);
