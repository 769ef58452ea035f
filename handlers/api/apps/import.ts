import { z } from 'zod';
import { importSpec, specSchema } from '#lib/appspec/spec.js';
import { appSchema } from '#lib/api/apps.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Create an app from an exported spec',
    body: specSchema,
    responses: { 201: z.object({ app: appSchema, missing_secrets: z.array(z.string()) }) },
    audit: { action: 'app.imported' },
  },
  async (_req, { env, body, reply, audit }) => {
    const { app, missing_secrets } = await importSpec(env, body);
    audit({ target: app.id, detail: { name: app.name } });
    return reply(201, { app, missing_secrets });
  },
);
