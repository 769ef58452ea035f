import { z } from 'zod';
import { NOTIFY_EVENTS } from '#lib/notify/message.js';
import { CHANNEL_KINDS } from '#lib/notify/store.js';

// The URL's own checks (scheme, addresses) are the outbound guard's, at save time.
const url = z.string().min(8).max(2048);
const events = z.array(z.enum(NOTIFY_EVENTS)).max(NOTIFY_EVENTS.length * 2);
const name = z.string().trim().min(1).max(100);
// The addresses' own check is the email kind's (lib/notify/kinds/email.ts).
const to = z.array(z.string().max(254)).max(20).describe('email: the recipients');

export const createBody = z.strictObject({
  kind: z.enum(CHANNEL_KINDS),
  name,
  url,
  events: events.optional(),
  enabled: z.boolean().optional(),
  to: to.optional(),
});
export const patchBody = z.strictObject({
  name: name.optional(),
  url: url.optional(),
  events: events.optional(),
  enabled: z.boolean().optional(),
  to: to.optional(),
});
export const channelParams = z.object({ id: z.string().min(1).max(64) });
export type ChannelParams = z.infer<typeof channelParams>;
