import { z } from 'zod';
import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { getDeployment, readLogs } from '../../../../../../lib/deploy/index.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { deploymentParams, type DeploymentParams } from '../_params.js';

const query = z.object({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
});
export const schema: HandlerModule['schema'] = { params: deploymentParams, query };

/** Lines in order; page with ?after=<last seq>. `next_after` is set when more lines follow. */
export const GET: Handler<DeploymentParams, unknown, z.infer<typeof query>> = async (_req, { env, params, query }) => {
  await getApp(env.db, params.id);
  await getDeployment(env.db, params.id, params.did);
  const rows = await readLogs(env.db, params.did, { after: query.after, limit: query.limit + 1 });
  const items = rows.slice(0, query.limit);
  return json(rows.length > query.limit ? { items, next_after: items.at(-1)!.seq } : { items });
};
