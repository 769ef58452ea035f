import { z } from 'zod';
import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { addTrigger, listTriggers } from '../../../../../lib/webhooks/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

const body = z.strictObject({ event: z.enum(['push', 'tag']), pattern: z.string().min(1).max(255), enabled: z.boolean().optional() });
export const schema: HandlerModule['schema'] = { params: appParams, body: { POST: body } };

export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ items: await listTriggers(env.db, params.id) });
};

export const POST: Handler<AppParams, z.infer<typeof body>> = async (_req, { env, params, body, audit }) => {
  await getApp(env.db, params.id);
  const trigger = await addTrigger(env.db, params.id, body, env.now());
  audit({ action: 'app.trigger_added', target: params.id, detail: { event: trigger.event, pattern: trigger.pattern } });
  return json(trigger, 201);
};
