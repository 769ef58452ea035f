import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { createDatabase, listDatabases } from '#lib/databases/index.js';
import { route } from '#lib/http/route.js';
import { items } from '#lib/api/common.js';
import { databaseSchema } from '#lib/api/databases.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's managed databases",
    params: appParams,
    responses: { 200: items(databaseSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listDatabases(env, params.id, true) });
  },
);

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Provision a managed database for an app (202: it starts in the background)',
    params: appParams,
    body: z.strictObject({
      engine: z.string().max(40),
      version: z.string().max(40).optional(),
      env_var: z.string().max(200).optional(),
    }),
    responses: { 202: z.object({ database: databaseSchema }) },
    audit: { action: 'database.created', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    const database = await createDatabase(env, app, body, (p) => void p);
    audit({
      detail: {
        database: database.id,
        engine: database.engine,
        version: database.version,
        env_var: database.env_var,
      },
    });
    return reply(202, { database });
  },
);
