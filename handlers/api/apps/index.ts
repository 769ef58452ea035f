import { z } from 'zod';
import { appNameSchema, sourceSchema } from '../../../lib/apps/schemas.js';
import { listApps } from '../../../lib/apps/store.js';
import { createApp } from '../../../lib/apps/ops.js';
import { currentStatuses } from '../../../lib/apps/status.js';
import { appSchema, items } from '../../../lib/api/schemas.js';
import { route } from '../../../lib/http/route.js';

export const GET = route({ summary: 'List apps with their current status', responses: { 200: items(appSchema) } }, async (_req, { env, reply }) =>
  reply(200, { items: await currentStatuses(env, await listApps(env.db)) }),
);

export const POST = route(
  {
    summary: 'Create an app',
    body: z.strictObject({ name: appNameSchema, source: sourceSchema }),
    responses: { 201: z.object({ app: appSchema }) },
    audit: { action: 'app.created' },
  },
  async (_req, { env, body, reply, audit }) => {
    const app = await createApp(env, body.name, body.source);
    audit({ target: app.id, detail: { name: app.name, source: app.source.type } });
    return reply(201, { app });
  },
);
