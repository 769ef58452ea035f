// Not a route: path parameters of one deployment.
import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { appId } from '../../_lib.js';

export const deploymentParams = z.object({
  id: appId,
  did: z.string().regex(ID_PATTERN, 'not a deployment id'),
});
