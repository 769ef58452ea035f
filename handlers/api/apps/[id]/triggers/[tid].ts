import { z } from 'zod';
import { notFound } from '#lib/http/errors.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { getApp } from '#lib/apps/store.js';
import { removeTrigger, updateTrigger } from '#lib/webhooks/store.js';
import { triggerSchema } from '#lib/api/webhooks.js';
import { route } from '#lib/http/route.js';
import { appId } from '../../_lib.js';

const triggerParams = z.object({ id: appId, tid: z.string().regex(ID_PATTERN, 'not a trigger id') });

export const PATCH = route(
  {
    permission: 'app.triggers',
    summary:
      'Change a deploy trigger: its pattern, its event, or pause it (enabled: false) without deleting it',
    params: triggerParams,
    body: z
      .strictObject({
        event: z.enum(['push', 'tag', 'pull_request']).optional(),
        pattern: z.string().min(1).max(255).optional(),
        enabled: z.boolean().optional(),
      })
      .refine(
        (b) => b.event !== undefined || b.pattern !== undefined || b.enabled !== undefined,
        'give at least one of event, pattern, enabled',
      ),
    responses: { 200: triggerSchema },
    audit: {
      action: 'app.trigger_updated',
      target: (c) => c.params.id,
      state: { kind: 'triggers', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    audit({ detail: { trigger: params.tid, ...body } });
    await getApp(env.db, params.id);
    const trigger = await updateTrigger(env.db, params.id, params.tid, body);
    if (!trigger) throw notFound('No such trigger');
    return reply(200, trigger);
  },
);

export const DELETE = route(
  {
    permission: 'app.triggers',
    summary: 'Remove a deploy trigger',
    params: triggerParams,
    responses: { 204: null },
    audit: {
      action: 'app.trigger_removed',
      target: (c) => c.params.id,
      state: { kind: 'triggers', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, reply, audit }) => {
    audit({ detail: { trigger: params.tid } });
    await getApp(env.db, params.id);
    if (!(await removeTrigger(env.db, params.id, params.tid))) throw notFound('No such trigger');
    return reply(204);
  },
);
