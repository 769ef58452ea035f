import { json } from '../../../../../lib/http/respond.js';
import { badRequest } from '../../../../../lib/http/errors.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { channelParams, type ChannelParams } from '../_schemas.js';

export const schema: HandlerModule['schema'] = { params: channelParams };

/** Sends one test message now (one attempt) and answers how it went. */
export const POST: Handler<ChannelParams> = async (_req, { env, params, audit }) => {
  const r = await env.notifier.test(params.id);
  audit({ action: 'notification.channel_tested', target: params.id, detail: { ok: r.ok, status: r.status } });
  if (r.refused) throw badRequest(`The notification URL is refused: ${r.error?.replace(/^refused: /, '')}`, [{ field: 'url', message: r.error ?? 'refused' }]);
  return json({ ok: r.ok, status: r.status, ...(r.error ? { error: r.error } : {}) });
};
