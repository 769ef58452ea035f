import { json } from '../../../lib/http/respond.js';
import { pruneEngine } from '../../../lib/instance/disk.js';
import type { Handler } from '../../../lib/http/handler.js';

/** Dangling images, stopped containers no app owns, build cache; never an app's images or volumes. */
export const POST: Handler = async (_req, { env, audit }) => {
  const r = await pruneEngine(env.engine);
  audit({ action: 'instance.pruned', detail: { ...r } });
  return json(r);
};
