import type { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { createChannel, listChannels } from '../../../../lib/notify/store.js';
import { NOTIFY_EVENTS } from '../../../../lib/notify/message.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { createBody } from './_schemas.js';

export const schema: HandlerModule['schema'] = { body: { POST: createBody } };

export const GET: Handler = async (_req, { env }) => json({ items: await listChannels(env.db), events: NOTIFY_EVENTS });

export const POST: Handler<unknown, z.infer<typeof createBody>> = async (_req, { env, body, audit }) => {
  const channel = await createChannel(env.db, env.sealer, env.notifier.transport, body, env.now());
  audit({ action: 'notification.channel_created', target: channel.id, detail: { kind: channel.kind, name: channel.name, url_hint: channel.url_hint } });
  return json(channel, 201);
};
