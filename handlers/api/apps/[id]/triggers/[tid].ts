import { z } from 'zod';
import { notFound } from '../../../../../lib/http/errors.js';
import { ID_PATTERN } from '../../../../../lib/crypto/random.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { removeTrigger } from '../../../../../lib/webhooks/store.js';
import { route } from '../../../../../lib/http/route.js';
import { appId } from '../../_shared.js';

export const DELETE = route(
  {
    summary: 'Remove a deploy trigger',
    params: z.object({ id: appId, tid: z.string().regex(ID_PATTERN, 'not a trigger id') }),
    responses: { 204: null },
    audit: { action: 'app.trigger_removed', target: (c) => c.params.id, state: { kind: 'triggers', id: (c) => c.params.id } },
  },
  async (_req, { env, params, reply, audit }) => {
    audit({ detail: { trigger: params.tid } });
    await getApp(env.db, params.id);
    if (!(await removeTrigger(env.db, params.id, params.tid))) throw notFound('No such trigger');
    return reply(204);
  },
);
