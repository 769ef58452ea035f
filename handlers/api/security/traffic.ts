import { disabledTrafficSnapshot } from '#lib/traffic/monitor.js';
import { trafficSnapshotSchema } from '#lib/api/security.js';
import { listDomains } from '#lib/proxy/domains.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'Top talkers, recent requests and anomalies seen in the proxy access log',
    description:
      'A caller limited to some apps sees only the recent requests to the hostnames of those apps: the others name apps ' +
      'outside their list. Top talkers and anomalies count addresses over every host and name none.',
    responses: { 200: trafficSnapshotSchema },
  },
  async (_req, { env, reply, principal }) => {
    const s = env.config.security;
    if (!env.monitor)
      return reply(
        200,
        disabledTrafficSnapshot({
          windowSeconds: s.windowSeconds,
          requestThreshold: s.requestThreshold,
          errorThreshold: s.errorThreshold,
        }),
      );
    const snapshot = env.monitor.snapshot();
    const apps = principal?.appIds ?? null;
    if (apps === null) return reply(200, snapshot);
    const hosts = new Set(
      (await listDomains(env))
        .filter((d) => d.app_id != null && apps.has(d.app_id))
        .map((d) => d.hostname.toLowerCase()),
    );
    return reply(200, {
      ...snapshot,
      recent_requests: snapshot.recent_requests.filter((r) =>
        hosts.has(r.host.toLowerCase().replace(/:\d+$/, '')),
      ),
    });
  },
);
