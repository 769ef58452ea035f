// Wire shapes of log drains.
import { z } from 'zod';
import { DRAIN_KINDS } from '../drains/kinds/index.js';
import { named, ts } from './common.js';

export const logDrainSchema = named(
  'LogDrain',
  z.object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(DRAIN_KINDS),
    url_hint: z.string().describe('The URL is sealed and never returned'),
    app_ids: z.array(z.string()).nullable().describe('null: every app'),
    header_names: z.array(z.string()).describe('The headers are sealed; only their names are shown'),
    enabled: z.boolean(),
    state: z.enum(['idle', 'sending', 'failing', 'disabled']).describe('How delivery goes now'),
    last_delivery: z
      .object({
        at: ts,
        ok: z.boolean(),
        status: z.number().int().nullable(),
        error: z.string().nullable(),
        lines: z.number().int(),
      })
      .nullable(),
    delivered: z.number().int().describe('Lines the receiver took'),
    dropped: z.number().int().describe('Lines dropped because the buffer was full'),
    buffered: z.number().int().describe('Lines waiting now'),
    created_at: ts,
    updated_at: ts,
  }),
);
