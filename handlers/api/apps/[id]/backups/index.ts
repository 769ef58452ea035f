import type { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { listConfigs } from '../../../../../lib/backups/index.js';
import { configView, createConfig } from '../../../../../lib/backups/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';
import { createBody } from './_schemas.js';

export const schema: HandlerModule['schema'] = { params: appParams, body: { POST: createBody } };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ items: await listConfigs(env, params.id) });
};

export const POST: Handler<AppParams, z.infer<typeof createBody>> = async (_req, { env, params, body, audit }) => {
  await getApp(env.db, params.id);
  const row = await createConfig(env, params.id, body);
  audit({ action: 'backup.config_created', target: params.id, detail: { backup: row.id, source: body.source, schedule: row.schedule, destination: body.destination?.type ?? 'local' } });
  return json({ backup: await configView(env, row) }, 201);
};
