import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { addTrigger, listTriggers } from '#lib/webhooks/store.js';
import { items } from '#lib/api/common.js';
import { triggerSchema } from '#lib/api/webhooks.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's deploy triggers",
    params: appParams,
    responses: { 200: items(triggerSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listTriggers(env.db, params.id) });
  },
);

export const POST = route(
  {
    permission: 'app.triggers',
    summary: 'Add a deploy trigger: a glob on pushed branch or tag names',
    params: appParams,
    body: z.strictObject({
      event: z.enum(['push', 'tag', 'pull_request']),
      pattern: z.string().min(1).max(255),
      enabled: z.boolean().optional(),
    }),
    responses: { 201: triggerSchema },
    audit: {
      action: 'app.trigger_added',
      target: (c) => c.params.id,
      state: { kind: 'triggers', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const trigger = await addTrigger(env.db, params.id, body, env.now());
    audit({ detail: { event: trigger.event, pattern: trigger.pattern } });
    return reply(201, trigger);
  },
);
