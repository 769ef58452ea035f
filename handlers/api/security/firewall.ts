import { json } from '../../../lib/http/respond.js';
import { firewallState, readHostSnapshot } from '../../../lib/security/snapshot.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = async (_req, { env }) => {
  const agentEnabled = env.config.security.agent;
  const snap = agentEnabled ? await readHostSnapshot(env.config.security.dir) : null;
  return json(firewallState(snap, { agentEnabled, now: env.now() }));
};
