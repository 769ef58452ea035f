import { disabledTrafficSnapshot } from '../../../lib/traffic/monitor.js';
import { trafficSnapshotSchema } from '../../../lib/api/security.js';
import { route } from '../../../lib/http/route.js';

export const GET = route(
  { permission: 'instance.read', summary: 'Top talkers, recent requests and anomalies seen in the proxy access log', responses: { 200: trafficSnapshotSchema } },
  (_req, { env, reply }) => {
    const s = env.config.security;
    if (!env.monitor) return reply(200, disabledTrafficSnapshot({ windowSeconds: s.windowSeconds, requestThreshold: s.requestThreshold, errorThreshold: s.errorThreshold }));
    return reply(200, env.monitor.snapshot());
  },
);
