// Wire shapes of notification channels and their deliveries.
import { z } from 'zod';
import { CHANNEL_KINDS } from '../notify/store.js';
import { NOTIFY_EVENTS } from '../notify/message.js';
import { named, ts } from './common.js';

export const notificationChannelSchema = named(
  'NotificationChannel',
  z.object({
    id: z.string(),
    kind: z.enum(CHANNEL_KINDS),
    name: z.string(),
    url_hint: z.string().describe('The URL is sealed and never returned'),
    events: z.array(z.enum(NOTIFY_EVENTS)),
    enabled: z.boolean(),
    last_delivery: z
      .object({ at: ts, ok: z.boolean(), status: z.number().int().nullable(), error: z.string().nullable() })
      .nullable(),
    to: z.array(z.string()).optional().describe('email channels: the recipients'),
    created_at: ts,
    updated_at: ts,
  }),
);

export const notificationDeliverySchema = named(
  'NotificationDelivery',
  z.object({
    at: ts,
    event: z.string(),
    ok: z.boolean(),
    status: z.number().int().nullable(),
    error: z.string().nullable(),
    attempts: z.number().int(),
  }),
);
