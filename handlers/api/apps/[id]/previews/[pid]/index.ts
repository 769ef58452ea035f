import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { getApp } from '#lib/apps/store.js';
import { getPreviewRow } from '#lib/previews/store.js';
import { previewView, removePreview } from '#lib/previews/ops.js';
import { previewBody } from '#lib/api/previews.js';
import { route } from '#lib/http/route.js';
import { appId } from '../../../_lib.js';

const previewParams = z.object({ id: appId, pid: z.string().regex(ID_PATTERN, 'not a preview id') });

export const GET = route(
  { permission: 'app.read', summary: 'One preview', params: previewParams, responses: { 200: previewBody } },
  async (_req, { env, params, reply }) => {
    const app = await getApp(env.db, params.id);
    return reply(200, {
      preview: await previewView(env, app, await getPreviewRow(env.db, app.id, params.pid)),
    });
  },
);

export const DELETE = route(
  {
    permission: 'app.deploy',
    summary:
      'Remove a preview with everything it made (containers, network, volumes, images, database, route, rows)',
    params: previewParams,
    responses: { 200: z.object({ deleted: z.literal(true) }) },
    audit: { action: 'app.preview_removed', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    const row = await getPreviewRow(env.db, app.id, params.pid);
    await removePreview(env, row);
    audit({ detail: { number: row.number, branch: row.branch } });
    return reply(200, { deleted: true });
  },
);
