import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { getApp } from '#lib/apps/store.js';
import { readLogPage } from '#lib/deploy/store.js';
import { getPreviewRow } from '#lib/previews/store.js';
import { logLineSchema } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { appId } from '../../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "The log of a preview's latest deployment; page with ?after=<next_after>",
    params: z.object({ id: appId, pid: z.string().regex(ID_PATTERN, 'not a preview id') }),
    query: z.object({
      after: z.coerce.number().int().min(0).optional(),
      limit: z.coerce.number().int().min(1).max(5000).default(1000),
    }),
    responses: { 200: z.object({ items: z.array(logLineSchema), next_after: z.number().int().optional() }) },
  },
  async (_req, { env, params, query, reply }) => {
    const app = await getApp(env.db, params.id);
    const row = await getPreviewRow(env.db, app.id, params.pid);
    if (!row.deployment_id) return reply(200, { items: [] });
    return reply(200, await readLogPage(env.db, row.deployment_id, query));
  },
);
