import { json } from '../../../../../lib/http/respond.js';
import { listDeliveries } from '../../../../../lib/notify/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { channelParams, type ChannelParams } from '../_schemas.js';

export const schema: HandlerModule['schema'] = { params: channelParams };

/** The channel's delivery log, newest first (the last 50). */
export const GET: Handler<ChannelParams> = async (_req, { env, params }) => json({ items: await listDeliveries(env.db, params.id) });
