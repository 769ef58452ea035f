import { z } from 'zod';
import { HttpError } from '#lib/http/errors.js';
import { applyAppFile } from '#lib/appspec/apply.js';
import { appFileSchema } from '#lib/appspec/spec.js';
import { appSchema } from '#lib/api/apps.js';
import { getAppByName } from '#lib/apps/store.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'app.admin',
    summary:
      'Create an app from an exported file (409 when an app of that name exists: POST /api/apps/apply updates one)',
    body: appFileSchema,
    responses: { 201: z.object({ app: appSchema, missing_secrets: z.array(z.string()) }) },
    audit: { action: 'app.imported' },
  },
  async (_req, { env, body, reply, audit }) => {
    if (await getAppByName(env.db, body.name))
      throw new HttpError('conflict', `An app named "${body.name}" already exists`);
    const { app, missing_secrets } = await applyAppFile(env, body, false);
    audit({ target: app!.id, detail: { name: app!.name } });
    return reply(201, { app: app!, missing_secrets });
  },
);
