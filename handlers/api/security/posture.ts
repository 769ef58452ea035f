import { posture } from '../../../lib/security/live.js';
import { items, postureItemSchema } from '../../../lib/api/schemas.js';
import { route } from '../../../lib/http/route.js';

// Re-evaluated on every request: there are no stored states to go stale.
export const GET = route({ summary: 'Security checks of this installation, in a fixed order', responses: { 200: items(postureItemSchema) } }, async (_req, { env, reply }) =>
  reply(200, await posture(env)),
);
