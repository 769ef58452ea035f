import { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { badRequest } from '../../../../../lib/http/errors.js';
import { ID_PATTERN } from '../../../../../lib/crypto/random.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { deleteDatabase, getDatabaseRow, toView } from '../../../../../lib/databases/index.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appId } from '../../_shared.js';

export const stepUp: HandlerModule['stepUp'] = ['DELETE'];
const params = z.object({ id: appId, dbid: z.string().regex(ID_PATTERN, 'not a database id') });
type Params = z.infer<typeof params>;
const delQuery = z.object({ keep_data: z.enum(['true', 'false']).default('false') });
export const schema: HandlerModule['schema'] = { params };

export const GET: Handler<Params> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ database: toView(await getDatabaseRow(env, params.id, params.dbid)) });
};

export const DELETE: Handler<Params> = async (_req, { env, params, query, audit }) => {
  const q = delQuery.safeParse(query);
  if (!q.success) throw badRequest('keep_data must be true or false', [{ field: 'keep_data', message: 'true or false' }]);
  await getApp(env.db, params.id);
  const keep = q.data.keep_data === 'true';
  audit({ action: 'database.deleted', target: params.id, detail: { database: params.dbid, keep_data: keep } });
  return json({ deleted: true, ...(await deleteDatabase(env, params.id, params.dbid, keep)) });
};
