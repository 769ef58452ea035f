// Gotify: `https://<server>/message?token=<application token>`, the message as JSON with its
// link as the notification's click target.
import { badRequest } from '../../http/errors.js';
import { cut, type Message } from '../message.js';
import { checkHttpUrl, postDelivery, urlHint } from './http.js';
import type { ChannelKindDef } from './types.js';

const PRIORITY = { failure: 8, warning: 6, success: 4, info: 4 } as const;

function checkShape(url: string): void {
  const u = new URL(url);
  if (!u.pathname.endsWith('/message') || !u.searchParams.get('token'))
    throw badRequest('A Gotify URL is https://<server>/message?token=<application token>', [
      { field: 'url', message: '/message with a token' },
    ]);
}

export function gotifyPayload(m: Message): unknown {
  const body = [m.text, ...m.fields.map((f) => `${f.name}: ${f.value}`)].filter(Boolean).join('\n');
  return {
    title: cut(m.title, 250),
    message: cut(body || m.title, 8000),
    priority: PRIORITY[m.tone],
    ...(m.link ? { extras: { 'client::notification': { click: { url: m.link } } } } : {}),
  };
}

export const gotify: ChannelKindDef = {
  check: async (url, _options, guard) => {
    checkShape(url);
    await checkHttpUrl(url, guard);
  },
  hint: urlHint,
  send: (m, ctx) => postDelivery(ctx.url, gotifyPayload(m), ctx.transport),
};
