import { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { listDeployments } from '../../../../../lib/deploy/index.js';
import { ID_PATTERN } from '../../../../../lib/crypto/random.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

// The ref is checked again by the queue (same rules as every ref: no shell characters, no leading "-").
const body = z.object({ ref: z.string().max(255).optional() }).strict();
const query = z.object({
  cursor: z.string().regex(ID_PATTERN, 'not a cursor').optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
export const schema: HandlerModule['schema'] = { params: appParams, query, body: { POST: body } };

export const GET: Handler<AppParams, unknown, z.infer<typeof query>> = async (_req, { env, params, query }) => {
  await getApp(env.db, params.id);
  return json(await listDeployments(env.db, params.id, query));
};

export const POST: Handler<AppParams, z.infer<typeof body>> = async (_req, { env, params, body, audit }) => {
  const app = await getApp(env.db, params.id);
  const { deployment } = await env.deployments.enqueue(app, { trigger: 'manual', ref: body.ref ?? null });
  audit({ action: 'deployment.created', target: app.id, detail: { deployment: deployment.id, ref: deployment.ref } });
  return json({ deployment }, 202);
};
