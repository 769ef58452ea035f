import { pruneEngine } from '#lib/instance/disk.js';
import { liveSet } from '#lib/instance/store.js';
import { route } from '#lib/http/route.js';
import { pruneResultSchema } from '#lib/api/instance.js';

/** Only what this instance made and no longer needs (its own labels or adopted ids), and the build cache. */
export const POST = route(
  {
    permission: 'instance.admin',
    summary:
      "Prune this instance's stopped helper containers, the containers and images of apps it no longer has, its dangling images, and the build cache (never a live app's images or volumes, never an object it did not create)",
    stepUp: true,
    responses: { 200: pruneResultSchema },
    audit: { action: 'instance.pruned' },
  },
  async (_req, { env, reply, audit }) => {
    const r = await pruneEngine(env.engine, await liveSet(env.db));
    audit({ detail: { ...r } });
    return reply(200, r);
  },
);
