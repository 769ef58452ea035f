import { z } from 'zod';
import { appNameSchema, sourceSchema } from '#lib/apps/schemas.js';
import { APP_NAME } from '#lib/apps/model.js';
import { createApp } from '#lib/apps/ops.js';
import { listAppPage } from '#lib/apps/listing.js';
import { appListItemSchema, appSchema } from '#lib/api/apps.js';
import { proxyHealthSchema } from '#lib/api/instance.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'app.read',
    summary:
      'List apps by name, a page at a time, with their current status, URLs and newest deployment, and the proxy state',
    query: z.object({
      cursor: z.string().regex(APP_NAME, 'a cursor from next_cursor').optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
      q: z.string().max(63).optional().describe('Only apps whose name contains this (any case)'),
    }),
    responses: {
      200: z.object({
        items: z.array(appListItemSchema),
        next_cursor: z.string().optional(),
        total: z.number().int().describe('Apps matching `q` in all pages'),
        proxy: proxyHealthSchema,
      }),
    },
  },
  async (_req, { env, query, reply, principal }) =>
    reply(200, await listAppPage(env, query, principal?.appIds ? [...principal.appIds] : null)),
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
