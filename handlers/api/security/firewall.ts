import { firewallState, readHostSnapshot } from '#lib/security/snapshot.js';
import { firewallStateSchema } from '#lib/api/security.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: "The host firewall's rules from the host agent's snapshot",
    responses: { 200: firewallStateSchema },
  },
  async (_req, { env, reply }) => {
    const agentEnabled = env.config.security.agent;
    const snap = agentEnabled ? await readHostSnapshot(env.config.security.dir) : null;
    return reply(200, firewallState(snap, { agentEnabled, now: env.now() }));
  },
);
