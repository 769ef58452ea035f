// Not a route (leading underscore): parameter schemas of the job and run endpoints.
import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { appId } from '../../_lib.js';

export const jobParams = z.object({ id: appId, jid: z.string().regex(ID_PATTERN, 'not a job id') });
export const runParams = z.object({ id: appId, rid: z.string().regex(ID_PATTERN, 'not a run id') });
export const pageQuery = z.object({
  cursor: z.string().regex(ID_PATTERN, 'not a cursor').optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
