import { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { badRequest } from '../../../../lib/http/errors.js';
import { sourceSchema } from '../../../../lib/apps/schemas.js';
import { getApp, updateApp } from '../../../../lib/apps/store.js';
import { deleteApp } from '../../../../lib/apps/ops.js';
import { currentStatuses } from '../../../../lib/apps/status.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../_shared.js';

export const stepUp: HandlerModule['stepUp'] = ['DELETE'];

const patch = z.strictObject({ name: z.string().optional(), source: sourceSchema.optional() });
const delQuery = z.object({ volumes: z.enum(['true', 'false']).default('false') });
export const schema: HandlerModule['schema'] = { params: appParams, body: { PATCH: patch } };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  const { deleting: _d, ...stored } = await getApp(env.db, params.id);
  const [app] = await currentStatuses(env, [stored]);
  return json({ app });
};

export const PATCH: Handler<AppParams, z.infer<typeof patch>> = async (_req, { env, params, body, audit }) => {
  const current = await getApp(env.db, params.id);
  // The name is in every container, network and volume name: renaming would orphan them.
  if (body.name !== undefined && body.name !== current.name) throw badRequest('An app cannot be renamed; export it and import it under the new name', [{ field: 'name', message: 'immutable' }]);
  const app = await updateApp(env.db, params.id, { source: body.source }, env.now());
  audit({ action: 'app.updated', target: app.id });
  return json({ app });
};

// The query is read only for DELETE; the runtime hands it over already parsed.
export const DELETE: Handler<AppParams> = async (_req, { env, params, query, audit }) => {
  const q = delQuery.safeParse(query);
  if (!q.success) throw badRequest('volumes must be true or false', [{ field: 'volumes', message: 'true or false' }]);
  const volumes = q.data.volumes === 'true';
  audit({ action: 'app.deleted', target: params.id, detail: { volumes } });
  const removed = await deleteApp(env, params.id, { volumes });
  return json({
    deleted: true,
    removed_containers: removed.containers,
    removed_volumes: removed.removedVolumes,
    kept_volumes: removed.keptVolumes,
    detached_containers: removed.detached,
  });
};
