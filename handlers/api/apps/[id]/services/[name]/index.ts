import { servicePatchSchema } from '#lib/apps/schemas.js';
import { getApp, patchServiceSettings } from '#lib/apps/store.js';
import { ensureKnownService } from '#lib/apps/ops.js';
import { serviceSettingsSchema } from '#lib/api/apps.js';
import { clusterSettings, patchClusterSettings } from '#lib/cluster/settings.js';
import { applyClusterSettings } from '#lib/cluster/services.js';
import { route } from '#lib/http/route.js';
import { serviceParams } from '../../../_lib.js';

// Settings are kept even for a service that has no container now (stopped, or removed by a failed
// deployment): the next deployment uses them. A name the app never had is a 404. In cluster mode a
// running Swarm service takes new replicas and placement at once.
export const PATCH = route(
  {
    permission: 'app.admin',
    summary: "Set a service's port, health path, and (cluster mode) replicas and placement",
    params: serviceParams,
    body: servicePatchSchema,
    responses: { 200: serviceSettingsSchema },
    audit: {
      action: 'app.service_updated',
      target: (c) => c.params.id,
      state: { kind: 'service', id: (c) => `${c.params.id}/${c.params.name}` },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    await ensureKnownService(env, app, params.name);
    const { replicas, placement, ...rest } = body;
    const settings = await patchServiceSettings(env.db, params.id, params.name, rest);
    await patchClusterSettings(env.db, params.id, params.name, { replicas, placement });
    const cs = (await clusterSettings(env.db, params.id)).get(params.name);
    // On a swarm, a running service scales and moves now; the next deploy would apply them anyway.
    if (cs && env.config.cluster.mode === 'swarm' && (replicas !== undefined || placement !== undefined))
      await applyClusterSettings(env.engine, app.name, params.name, cs).catch((err) =>
        // Stored either way: the next deploy (or start) applies them.
        env.log.warn({ app: app.name, service: params.name, err: String(err) }, 'could not apply now'),
      );
    const out = { ...settings, replicas: cs?.replicas ?? null, placement: cs?.placement ?? null };
    audit({ detail: { service: params.name, ...out } });
    return reply(200, { name: params.name, ...out });
  },
);
