import { listDeliveries } from '#lib/notify/store.js';
import { route } from '#lib/http/route.js';
import { items } from '#lib/api/common.js';
import { notificationDeliverySchema } from '#lib/api/notifications.js';
import { channelParams } from '../_lib.js';

/** The channel's delivery log, newest first (the last 50). */
export const GET = route(
  {
    permission: 'instance.admin',
    summary: "A channel's delivery log, newest first (the last 50)",
    params: channelParams,
    responses: { 200: items(notificationDeliverySchema) },
  },
  async (_req, { env, params, reply }) => reply(200, { items: await listDeliveries(env.db, params.id) }),
);
