import { listNodes, requireClusterMode } from '#lib/cluster/nodes.js';
import { expireJoinToken } from '#lib/cluster/join.js';
import { route } from '#lib/http/route.js';
import { nodeListSchema } from '#lib/api/nodes.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary:
      "The swarm's nodes: role, status, availability, resources and running tasks (409 when cluster mode is off)",
    responses: { 200: nodeListSchema },
  },
  async (_req, { env, reply }) => {
    requireClusterMode(env);
    // An expired join command stops working at the latest here, whatever the sweep's timing.
    await expireJoinToken(env);
    return reply(200, { items: await listNodes(env) });
  },
);
