// What one channel kind is: how its URL (and options) are checked at save time, what an API
// answer may show of the URL, and how a message becomes a delivery. One file per kind, in the
// table of ./index.ts.
import type { OutboundOptions } from '../../net/outbound.js';
import type { Message } from '../message.js';

/** The kind's non-secret settings (an email channel's recipients). */
export interface ChannelOptions {
  to?: string[];
}

export interface Delivery {
  ok: boolean;
  status: number | null;
  error?: string;
  /** The guard refused the address (it would be a 400 at save time too). */
  refused?: boolean;
}

export interface SendContext {
  /** The channel's URL, opened for this delivery only. */
  url: string;
  /** The webhook kind's signing secret. */
  secret: string | null;
  options: ChannelOptions;
  transport: OutboundOptions;
}

export interface ChannelKindDef {
  /** Save time: throws OutboundRefused or a 400 naming what is wrong with the URL or options. */
  check(url: string, options: ChannelOptions, guard: OutboundOptions): Promise<void>;
  /** What an answer shows of the URL: its host and the last 4 characters. */
  hint(url: string): string;
  send(message: Message, ctx: SendContext): Promise<Delivery>;
  /** The kind signs its deliveries with a secret made at creation and shown once. */
  signed?: true;
}
