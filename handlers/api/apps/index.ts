import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { appNameSchema, sourceSchema } from '../../../lib/apps/schemas.js';
import { insertApp, listApps } from '../../../lib/apps/store.js';
import { currentStatuses } from '../../../lib/apps/status.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

const body = z.strictObject({ name: appNameSchema, source: sourceSchema });
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const GET: Handler = async (_req, { env }) => json({ items: await currentStatuses(env, await listApps(env.db)) });

export const POST: Handler<{}, z.infer<typeof body>> = async (_req, { env, body, audit }) => {
  const app = await insertApp(env.db, body.name, body.source, env.now());
  audit({ action: 'app.created', target: app.id, detail: { name: app.name, source: app.source.type } });
  env.bus.publish('apps', { id: app.id, name: app.name, status: app.status });
  return json({ app }, 201);
};
