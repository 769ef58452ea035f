import { z } from 'zod';
import { badRequest } from '#lib/http/errors.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { getApp } from '#lib/apps/store.js';
import { deleteDatabase } from '#lib/databases/index.js';
import { getDatabaseRow } from '#lib/databases/store.js';
import { toView } from '#lib/databases/model.js';
import { route } from '#lib/http/route.js';
import { databaseSchema } from '#lib/api/databases.js';
import { appId } from '../../_lib.js';

const params = z.object({ id: appId, dbid: z.string().regex(ID_PATTERN, 'not a database id') });
const delQuery = z.object({ keep_data: z.enum(['true', 'false']).default('false') });

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One managed database of an app',
    params,
    responses: { 200: z.object({ database: databaseSchema }) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { database: toView(await getDatabaseRow(env.db, params.id, params.dbid)) });
  },
);

export const DELETE = route(
  {
    permission: 'app.admin',
    summary: 'Delete a managed database (`?keep_data=true` keeps its volume)',
    stepUp: true,
    params,
    query: z.object({ keep_data: z.string().optional() }),
    responses: { 200: z.looseObject({ deleted: z.literal(true) }) },
    audit: { action: 'database.deleted', target: (c) => c.params.id },
  },
  async (_req, { env, params, query, reply, audit }) => {
    // Checked here, so the 400 names the accepted values.
    const q = delQuery.safeParse(query);
    if (!q.success)
      throw badRequest('keep_data must be true or false', [{ field: 'keep_data', message: 'true or false' }]);
    await getApp(env.db, params.id);
    const keep = q.data.keep_data === 'true';
    audit({ detail: { database: params.dbid, keep_data: keep } });
    return reply(200, {
      deleted: true as const,
      ...(await deleteDatabase(env, params.id, params.dbid, keep)),
    });
  },
);
