import type { z } from 'zod';
import { json, noContent } from '../../../../../lib/http/respond.js';
import { deleteChannel, getChannel, updateChannel } from '../../../../../lib/notify/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { channelParams, patchBody, type ChannelParams } from '../_schemas.js';

export const schema: HandlerModule['schema'] = { params: channelParams, body: { PATCH: patchBody } };

export const GET: Handler<ChannelParams> = async (_req, { env, params }) => json(await getChannel(env.db, params.id));

export const PATCH: Handler<ChannelParams, z.infer<typeof patchBody>> = async (_req, { env, params, body, audit }) => {
  const channel = await updateChannel(env.db, env.sealer, env.notifier.transport, params.id, body, env.now());
  audit({ action: 'notification.channel_updated', target: channel.id, detail: { fields: Object.keys(body), url_hint: channel.url_hint } });
  return json(channel);
};

export const DELETE: Handler<ChannelParams> = async (_req, { env, params, audit }) => {
  await deleteChannel(env.db, params.id);
  audit({ action: 'notification.channel_deleted', target: params.id });
  return noContent();
};
