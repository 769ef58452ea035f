// Generic webhook: the message as JSON, signed with HMAC-SHA256 over the exact body under a
// secret made when the channel is created and shown once (`X-Svc-Signature: sha256=<hex>`), so
// the receiver can tell svc's deliveries from anyone else's.
import { createHmac } from 'node:crypto';
import type { Message } from '../message.js';
import { checkHttpUrl, postDelivery, urlHint } from './http.js';
import type { ChannelKindDef } from './types.js';

export const SIGNATURE_HEADER = 'x-svc-signature';

export function signature(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function webhookPayload(m: Message): unknown {
  return {
    event: m.event,
    at: m.at,
    title: m.title,
    text: m.text,
    tone: m.tone,
    link: m.link,
    fields: m.fields,
  };
}

export const webhook: ChannelKindDef = {
  signed: true,
  check: (url, _options, guard) => checkHttpUrl(url, guard),
  hint: urlHint,
  send: (m, ctx) => {
    const body = Buffer.from(JSON.stringify(webhookPayload(m)));
    const headers: Record<string, string> = { 'x-svc-event': m.event };
    if (ctx.secret) headers[SIGNATURE_HEADER] = signature(ctx.secret, body);
    return postDelivery(ctx.url, body, { ...ctx.transport, headers });
  },
};
