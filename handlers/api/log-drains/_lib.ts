import { z } from 'zod';
import { DRAIN_KINDS } from '#lib/drains/kinds/index.js';
import { ID_PATTERN } from '#lib/crypto/random.js';

// The URL's own checks (scheme, addresses) are the kind's and the outbound guard's, at save time.
const url = z.string().min(8).max(2048);
const name = z.string().trim().min(1).max(100);
const appIds = z
  .array(z.string().regex(ID_PATTERN, 'not an app id'))
  .max(200)
  .nullable()
  .describe('null: every app');
// Names and values are checked by lib/drains (reserved names, one-line values).
const headers = z
  .record(z.string().max(64), z.string().max(4096))
  .describe('HTTP kinds only; sealed, never returned');

export const createBody = z.strictObject({
  name,
  kind: z.enum(DRAIN_KINDS),
  url,
  app_ids: appIds.optional(),
  headers: headers.optional(),
  enabled: z.boolean().optional(),
});

export const patchBody = z.strictObject({
  name: name.optional(),
  url: url.optional(),
  app_ids: appIds.optional(),
  headers: headers.optional(),
  enabled: z.boolean().optional(),
});

export const drainParams = z.object({ id: z.string().min(1).max(64) });
