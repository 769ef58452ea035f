import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { refSchema } from '#lib/git/schemas.js';
import { deployPreview, listPreviews } from '#lib/previews/ops.js';
import { MAX_NUMBER } from '#lib/previews/model.js';
import { items } from '#lib/api/common.js';
import { previewBody, previewSchema } from '#lib/api/previews.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's previews",
    params: appParams,
    responses: { 200: items(previewSchema) },
  },
  async (_req, { env, params, reply }) => {
    const app = await getApp(env.db, params.id);
    return reply(200, { items: await listPreviews(env, app) });
  },
);

export const POST = route(
  {
    permission: 'app.deploy',
    summary:
      'Build and deploy a preview of a branch (from any git host; number defaults to the next free one from 1000)',
    description:
      'The preview with that number is redeployed when it exists. 409 when previews are off for the app.',
    params: appParams,
    body: z.strictObject({
      branch: refSchema,
      number: z.number().int().min(1).max(MAX_NUMBER).optional(),
      title: z.string().max(200).optional(),
    }),
    responses: { 202: previewBody },
    audit: { action: 'app.preview_deployed', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    const preview = await deployPreview(env, app, {
      number: body.number ?? null,
      branch: body.branch,
      title: body.title ?? null,
      trigger: 'manual',
    });
    audit({ detail: { number: preview.number, branch: preview.branch, deployment: preview.deployment_id } });
    return reply(202, { preview });
  },
);
