// Telegram bot: `https://api.telegram.org/bot<token>/sendMessage?chat_id=<chat>` (or a self-hosted
// Bot API server), the message as HTML with every text of the event escaped.
import { badRequest } from '../../http/errors.js';
import { cut, LOG_FIELD, type Message } from '../message.js';
import { checkHttpUrl, postDelivery, urlHint } from './http.js';
import type { ChannelKindDef } from './types.js';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function chatOf(url: string): string {
  const u = new URL(url);
  const chat = u.searchParams.get('chat_id');
  if (
    !/^\/bot[0-9]+:[A-Za-z0-9_-]+\/sendMessage$/.test(u.pathname) ||
    !chat ||
    !/^-?[0-9]+$|^@[A-Za-z0-9_]{5,}$/.test(chat)
  )
    throw badRequest('A Telegram URL is https://api.telegram.org/bot<token>/sendMessage?chat_id=<chat id>', [
      { field: 'url', message: 'bot token path and chat_id' },
    ]);
  return chat;
}

export function telegramPayload(m: Message, chat: string): unknown {
  const lines = [`<b>${esc(m.title)}</b>`];
  if (m.text) lines.push(esc(m.text));
  for (const f of m.fields)
    lines.push(
      f.name === LOG_FIELD
        ? `<pre>${esc(cut(f.value, 1500))}</pre>`
        : `<b>${esc(f.name)}</b>: ${esc(f.value)}`,
    );
  if (m.link) lines.push(`<a href="${esc(m.link)}">Open in svc</a>`);
  return {
    chat_id: chat,
    text: cut(lines.join('\n'), 4000),
    parse_mode: 'HTML',
    disable_web_page_preview: true,
  };
}

export const telegram: ChannelKindDef = {
  check: async (url, _options, guard) => {
    chatOf(url);
    await checkHttpUrl(url, guard);
  },
  hint: urlHint,
  send: (m, ctx) => postDelivery(ctx.url, telegramPayload(m, chatOf(ctx.url)), ctx.transport),
};
