import { z } from 'zod';
import { appNameSchema, sourceSchema } from '#lib/apps/schemas.js';
import { listApps } from '#lib/apps/store.js';
import { createApp } from '#lib/apps/ops.js';
import { currentStatuses } from '#lib/apps/status.js';
import { appSchema } from '#lib/api/apps.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';
import { visible } from '#lib/auth/access.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'List apps with their current status',
    responses: { 200: items(appSchema) },
  },
  async (_req, { env, reply, principal }) =>
    reply(200, {
      items: await currentStatuses(
        env,
        visible(principal, await listApps(env.db), (a) => a.id),
      ),
    }),
);

export const POST = route(
  {
    permission: 'app.admin',
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
