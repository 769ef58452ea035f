// Not a route: the backups endpoints' parameter and body schemas.
import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { appId } from '../../_lib.js';

const id = (what: string) => z.string().regex(ID_PATTERN, `not a ${what} id`);
export const configParams = z.object({ id: appId, bid: id('backup') });
export const runParams = z.object({ id: appId, rid: id('run') });
export const restoreParams = z.object({ id: appId, xid: id('restore') });
export type ConfigParams = z.infer<typeof configParams>;
export type RunParams = z.infer<typeof runParams>;

const source = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('database'), database_id: id('database') }),
  z.strictObject({ type: z.literal('volume'), volume: z.string().max(64) }),
]);
export const destinationBody = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('local') }),
  z.strictObject({
    type: z.literal('s3'),
    endpoint: z.string().max(300),
    region: z.string().max(40),
    bucket: z.string().max(63),
    prefix: z.string().max(200).default(''),
    access_key_id: z.string().max(128),
    secret_access_key: z.string().min(1).max(256).optional(),
    path_style: z.boolean().default(false),
  }),
]);
const fields = {
  source,
  schedule: z.string().max(200),
  keep_last: z.number(),
  destination: destinationBody.optional(),
  enabled: z.boolean().optional(),
  verify_after_run: z.boolean().optional(),
};
export const createBody = z.strictObject(fields);
export const patchBody = z.strictObject({
  ...fields,
  source: source.optional(),
  schedule: fields.schedule.optional(),
  keep_last: fields.keep_last.optional(),
});
