import { z } from 'zod';
import { createChannel, listChannels } from '#lib/notify/store.js';
import { NOTIFY_EVENTS } from '#lib/notify/message.js';
import { route } from '#lib/http/route.js';
import { notificationChannelSchema } from '#lib/api/notifications.js';
import { createBody } from './_lib.js';

export const GET = route(
  {
    permission: 'instance.admin',
    summary: 'The notification channels and the events they can subscribe to',
    responses: { 200: z.object({ items: z.array(notificationChannelSchema), events: z.array(z.string()) }) },
  },
  async (_req, { env, reply }) =>
    reply(200, { items: await listChannels(env.db), events: [...NOTIFY_EVENTS] }),
);

export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Add a notification channel',
    description:
      'A `webhook` channel answers its signing secret here (`secret`), once: deliveries carry `X-Svc-Signature: sha256=<HMAC-SHA256 of the body>`.',
    body: createBody,
    responses: {
      201: z.object({
        channel: notificationChannelSchema,
        secret: z.string().optional().describe('webhook only: the signing secret, shown this once'),
      }),
    },
    audit: { action: 'notification.channel_created', state: { kind: 'notification_channel' } },
  },
  async (_req, { env, body, reply, audit }) => {
    const { secret, ...channel } = await createChannel(
      env.db,
      env.sealer,
      env.notifier.transport,
      body,
      env.now(),
    );
    audit({
      target: channel.id,
      detail: { kind: channel.kind, name: channel.name, url_hint: channel.url_hint },
    });
    return reply(201, secret ? { channel, secret } : { channel });
  },
);
