// The channel kinds, one file each. A kind named here is accepted by the API, checked at save
// time and delivered by the notifier; nothing else knows the list.
import { discord } from './discord.js';
import { slack } from './slack.js';
import { webhook } from './webhook.js';
import { email } from './email.js';
import { telegram } from './telegram.js';
import { ntfy } from './ntfy.js';
import { gotify } from './gotify.js';
import type { ChannelKindDef } from './types.js';

export const CHANNEL_KINDS = ['discord', 'slack', 'webhook', 'email', 'telegram', 'ntfy', 'gotify'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

export const CHANNEL_KIND_TABLE: Record<ChannelKind, ChannelKindDef> = {
  discord,
  slack,
  webhook,
  email,
  telegram,
  ntfy,
  gotify,
};

export type { ChannelKindDef, ChannelOptions, Delivery, SendContext } from './types.js';
