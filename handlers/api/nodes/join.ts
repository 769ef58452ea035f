import { requireClusterMode } from '#lib/cluster/nodes.js';
import { makeJoinCommand } from '#lib/cluster/join.js';
import { route } from '#lib/http/route.js';
import { joinCommandSchema } from '#lib/api/nodes.js';

// The command carries the swarm's worker token: whoever holds it can add a host to the cluster.
export const POST = route(
  {
    permission: 'instance.admin',
    stepUp: true,
    summary:
      'A shell line that makes a new Debian host trust the cluster registry and join the swarm as a worker, until expires_at',
    description:
      "The command embeds the current worker join token; when it expires the token is rotated and the command no longer joins. Provisions the control plane's own registry on first use (unless SVC_REGISTRY is set).",
    responses: { 200: joinCommandSchema },
    audit: { action: 'node.join_command' },
  },
  async (_req, { env, reply, audit }) => {
    requireClusterMode(env);
    const r = await makeJoinCommand(env);
    // Never the command: it holds the token.
    audit({ detail: { expires_at: r.expires_at } });
    return reply(200, r);
  },
);
