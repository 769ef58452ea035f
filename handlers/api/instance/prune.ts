import { pruneEngine } from '../../../lib/instance/disk.js';
import { route } from '../../../lib/http/route.js';
import { pruneResultSchema } from '../../../lib/api/schemas.js';

/** Dangling images, stopped containers no app owns, build cache; never an app's images or volumes. */
export const POST = route(
  { summary: "Prune dangling images, stopped containers no app owns and build cache (never an app's images or volumes)", responses: { 200: pruneResultSchema }, audit: { action: 'instance.pruned' } },
  async (_req, { env, reply, audit }) => {
    const r = await pruneEngine(env.engine);
    audit({ detail: { ...r } });
    return reply(200, r);
  },
);
