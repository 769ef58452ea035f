// ntfy: the channel's URL names the server and the topic (`https://ntfy.sh/<topic>`, an access
// token as `?auth=`); the message is published as JSON to the server's root, as ntfy documents.
import { badRequest } from '../../http/errors.js';
import { cut, type Message } from '../message.js';
import { checkHttpUrl, postDelivery, urlHint } from './http.js';
import type { ChannelKindDef } from './types.js';

const PRIORITY = { failure: 4, warning: 4, success: 3, info: 3 } as const;
const TAGS = {
  failure: 'rotating_light',
  warning: 'warning',
  success: 'white_check_mark',
  info: 'information_source',
} as const;

function split(url: string): { root: string; topic: string } {
  const u = new URL(url);
  const topic = u.pathname.replace(/^\/+|\/+$/g, '');
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(topic))
    throw badRequest('An ntfy URL is https://<server>/<topic> (letters, digits, - and _)', [
      { field: 'url', message: 'one topic in the path' },
    ]);
  return { root: `${u.origin}/${u.search}`, topic };
}

export function ntfyPayload(m: Message, topic: string): unknown {
  const body = [m.text, ...m.fields.map((f) => `${f.name}: ${f.value}`)].filter(Boolean).join('\n');
  return {
    topic,
    title: cut(m.title, 250),
    message: cut(body || m.title, 3900),
    priority: PRIORITY[m.tone],
    tags: [TAGS[m.tone]],
    ...(m.link ? { click: m.link } : {}),
  };
}

export const ntfy: ChannelKindDef = {
  check: async (url, _options, guard) => {
    split(url);
    await checkHttpUrl(url, guard);
  },
  hint: urlHint,
  send: (m, ctx) => {
    const { root, topic } = split(ctx.url);
    return postDelivery(root, ntfyPayload(m, topic), ctx.transport);
  },
};
