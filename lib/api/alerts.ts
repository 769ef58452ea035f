// Wire shapes of resource history, alert rules and their events.
import { z } from 'zod';
import { ALERT_EVENT_KINDS, ALERT_METRICS, ALERT_OPS, ALERT_STATES } from '../alerts/rules.js';
import { named, ts } from './common.js';

export const resourceHistorySchema = named(
  'ResourceHistory',
  z.object({
    items: z
      .array(
        z.object({
          service: z.string(),
          at: ts,
          cpu_percent: z.number().describe('Average over the step; 100 = one core busy'),
          memory_bytes: z.number(),
          memory_limit_bytes: z.number(),
          restarts: z.number().int().describe('Restarts seen during the step'),
        }),
      )
      .describe('Oldest first (services in name order within a step); a step without a sample is absent'),
  }),
  "An app's CPU, memory and restarts per service over a window",
);

export const alertRuleSchema = named(
  'AlertRule',
  z.object({
    id: z.string(),
    name: z.string(),
    app_id: z.string().nullable().describe('null: a rule on the host'),
    metric: z.enum(ALERT_METRICS),
    op: z.enum(ALERT_OPS),
    threshold: z.number(),
    for_s: z
      .number()
      .int()
      .describe('How long a level must hold before the rule fires; the window of counted metrics'),
    channels: z
      .array(z.string())
      .describe('Notification channel ids; empty: every channel subscribed to the event'),
    enabled: z.boolean(),
    state: z.enum(ALERT_STATES),
    since: ts.nullable().describe('When the rule entered its state'),
    value: z.number().nullable().describe('The value at the last evaluation (null: nothing to measure)'),
    evaluated_at: ts.nullable(),
    created_at: ts,
    updated_at: ts,
  }),
);

export const alertEventSchema = named(
  'AlertEvent',
  z.object({
    id: z.string(),
    rule_id: z.string().nullable().describe('null once the rule was deleted'),
    rule: z.string(),
    app_id: z.string().nullable(),
    metric: z.enum(ALERT_METRICS),
    kind: z.enum(ALERT_EVENT_KINDS),
    value: z.number().nullable(),
    threshold: z.number(),
    detail: z.string().nullable().describe('What the value was measured on'),
    at: ts,
    notified: z.boolean().describe('Its one notification went out'),
    notified_at: ts.nullable(),
  }),
);
