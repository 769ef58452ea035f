// Discord webhook: one embed, coloured by outcome. Limits from Discord's embed rules.
import { cut, LOG_FIELD, type Message, type Tone } from '../message.js';
import { checkHttpUrl, postDelivery, urlHint } from './http.js';
import type { ChannelKindDef } from './types.js';

const COLOUR: Record<Tone, number> = {
  success: 0x2e9d4f,
  failure: 0xd64541,
  warning: 0xe8a33d,
  info: 0x3b7dd8,
};

export function discordPayload(m: Message): unknown {
  return {
    username: 'svc',
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: cut(m.title, 256),
        description: cut(m.text, 4000),
        color: COLOUR[m.tone],
        ...(m.link ? { url: m.link } : {}),
        fields: m.fields.slice(0, 25).map((f) => ({
          name: cut(f.name, 256),
          value: cut(f.name === LOG_FIELD ? '```\n' + cut(f.value, 1000) + '\n```' : f.value, 1024),
          inline: f.name !== LOG_FIELD,
        })),
        timestamp: m.at,
        footer: { text: m.event },
      },
    ],
  };
}

export const discord: ChannelKindDef = {
  check: (url, _options, guard) => checkHttpUrl(url, guard),
  hint: urlHint,
  send: (m, ctx) => postDelivery(ctx.url, discordPayload(m), ctx.transport),
};
