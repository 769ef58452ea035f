import { fail2banState, readHostSnapshot } from '#lib/security/snapshot.js';
import { fail2banStateSchema } from '#lib/api/security.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: "fail2ban's jails from the host agent's snapshot",
    responses: { 200: fail2banStateSchema },
  },
  async (_req, { env, reply }) => {
    const agentEnabled = env.config.security.agent;
    const snap = agentEnabled ? await readHostSnapshot(env.config.security.dir) : null;
    return reply(200, fail2banState(snap, { agentEnabled, now: env.now() }));
  },
);
