import { getChannel, deleteChannel, updateChannel } from '#lib/notify/store.js';
import { route } from '#lib/http/route.js';
import { notificationChannelSchema } from '#lib/api/notifications.js';
import { channelParams, patchBody } from '../_lib.js';

export const GET = route(
  {
    permission: 'instance.admin',
    summary: 'One notification channel',
    params: channelParams,
    responses: { 200: notificationChannelSchema },
  },
  async (_req, { env, params, reply }) => reply(200, await getChannel(env.db, params.id)),
);

export const PATCH = route(
  {
    permission: 'instance.admin',
    summary: 'Change a notification channel',
    params: channelParams,
    body: patchBody,
    responses: { 200: notificationChannelSchema },
    audit: {
      action: 'notification.channel_updated',
      target: (c) => c.params.id,
      state: { kind: 'notification_channel', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const channel = await updateChannel(
      env.db,
      env.sealer,
      env.notifier.transport,
      params.id,
      body,
      env.now(),
    );
    audit({ target: channel.id, detail: { fields: Object.keys(body), url_hint: channel.url_hint } });
    return reply(200, channel);
  },
);

export const DELETE = route(
  {
    permission: 'instance.admin',
    summary: 'Delete a notification channel',
    params: channelParams,
    responses: { 204: null },
    audit: {
      action: 'notification.channel_deleted',
      target: (c) => c.params.id,
      state: { kind: 'notification_channel', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, reply }) => {
    await deleteChannel(env.db, params.id);
    return reply(204);
  },
);
