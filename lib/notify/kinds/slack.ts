// Slack incoming webhook: `text` (the notification fallback) and blocks.
import { cut, LOG_FIELD, type Message } from '../message.js';
import { checkHttpUrl, postDelivery, urlHint } from './http.js';
import type { ChannelKindDef } from './types.js';

// Slack's mrkdwn treats &, < and > as markup: escaped so an app's text cannot forge links or mentions.
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function slackPayload(m: Message): unknown {
  const blocks: unknown[] = [{ type: 'header', text: { type: 'plain_text', text: cut(m.title, 150) } }];
  if (m.text) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: cut(esc(m.text), 2900) } });
  const short = m.fields.filter((f) => f.name !== LOG_FIELD).slice(0, 10);
  if (short.length)
    blocks.push({
      type: 'section',
      fields: short.map((f) => ({ type: 'mrkdwn', text: cut(`*${esc(f.name)}*\n${esc(f.value)}`, 2000) })),
    });
  const logs = m.fields.find((f) => f.name === LOG_FIELD);
  if (logs)
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: cut('```' + esc(logs.value) + '```', 2900) },
    });
  const ctx = [
    `${m.tone === 'success' ? '✅' : m.tone === 'failure' ? '❌' : m.tone === 'warning' ? '⚠️' : 'ℹ️'} ${m.event}`,
    m.at,
  ];
  if (m.link) ctx.push(`<${m.link}|Open in svc>`);
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: ctx.join(' · ') }] });
  return { text: cut(`${m.title}${m.text ? ` — ${m.text}` : ''}`, 3000), blocks };
}

export const slack: ChannelKindDef = {
  check: (url, _options, guard) => checkHttpUrl(url, guard),
  hint: urlHint,
  send: (m, ctx) => postDelivery(ctx.url, slackPayload(m), ctx.transport),
};
