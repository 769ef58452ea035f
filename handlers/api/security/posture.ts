import { posture } from '#lib/security/live.js';
import { items } from '#lib/api/common.js';
import { postureItemSchema } from '#lib/api/security.js';
import { route } from '#lib/http/route.js';
import { visible } from '#lib/auth/access.js';

// Re-evaluated on every request: there are no stored states to go stale.
export const GET = route(
  {
    permission: 'instance.read',
    summary: 'Security checks of this installation, in a fixed order',
    responses: { 200: items(postureItemSchema) },
  },
  async (_req, { env, reply, principal }) => {
    const p = await posture(env);
    // A service of an app outside the caller's list is not theirs to see (host_ports rows name one).
    return reply(200, { ...p, items: visible(principal, p.items, (i) => i.app) });
  },
);
