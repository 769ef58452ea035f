// Wire shapes of deploy triggers, webhook deliveries and the deploy key.
import { z } from 'zod';
import { DELIVERY_OUTCOMES } from '../webhooks/deliveries-store.js';
import { TRIGGER_EVENTS } from '../webhooks/triggers.js';
import { named, ts } from './common.js';

export const triggerSchema = named(
  'Trigger',
  z.object({ id: z.string(), event: z.enum(TRIGGER_EVENTS), pattern: z.string(), enabled: z.boolean() }),
);

export const webhookDeliverySchema = named(
  'WebhookDelivery',
  z.object({
    id: z.string(),
    at: ts,
    provider: z.string().nullable().describe('The forge; null for a refused delivery that named none'),
    event: z.string().nullable(),
    delivery_id: z.string().nullable().describe("The forge's own delivery id, when it sent one"),
    ref: z.string().nullable().describe('Branch or tag name'),
    commit: z.string().nullable(),
    outcome: z.enum(DELIVERY_OUTCOMES),
    reason: z.string().nullable(),
    deployment_id: z.string().nullable(),
  }),
  "What one delivery to the app's webhook came to (never its payload nor its signature)",
);

export const publicKeySchema = named(
  'DeployKey',
  z.object({ public_key: z.string(), fingerprint: z.string(), created_at: ts }),
);
