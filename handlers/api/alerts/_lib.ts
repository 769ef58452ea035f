import { z } from 'zod';
import { ALERT_METRICS, ALERT_OPS } from '#lib/alerts/rules.js';
import { ID_PATTERN } from '#lib/crypto/random.js';

const name = z.string().trim().min(1).max(100);
const threshold = z.number().finite().min(-1e12).max(1e12);
const forS = z
  .number()
  .int()
  .min(0)
  .max(7 * 86_400)
  .describe('seconds (default 300)');
const channels = z.array(z.string().min(1).max(64)).max(20);

export const createBody = z.strictObject({
  name,
  app_id: z.string().regex(ID_PATTERN, 'not an app id').nullable().optional(),
  metric: z.enum(ALERT_METRICS),
  op: z.enum(ALERT_OPS),
  threshold,
  for_s: forS.optional(),
  channels: channels.optional(),
  enabled: z.boolean().optional(),
});

export const patchBody = z.strictObject({
  name: name.optional(),
  app_id: z.string().regex(ID_PATTERN, 'not an app id').nullable().optional(),
  metric: z.enum(ALERT_METRICS).optional(),
  op: z.enum(ALERT_OPS).optional(),
  threshold: threshold.optional(),
  for_s: forS.optional(),
  channels: channels.optional(),
  enabled: z.boolean().optional(),
});

export const ruleParams = z.object({ id: z.string().min(1).max(64) });
