import { z } from 'zod';
import { noContent } from '../../../../../lib/http/respond.js';
import { notFound } from '../../../../../lib/http/errors.js';
import { ID_PATTERN } from '../../../../../lib/crypto/random.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { removeTrigger } from '../../../../../lib/webhooks/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appId } from '../../_shared.js';

const params = z.object({ id: appId, tid: z.string().regex(ID_PATTERN, 'not a trigger id') });
export const schema: HandlerModule['schema'] = { params };

export const DELETE: Handler<z.infer<typeof params>> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  audit({ action: 'app.trigger_removed', target: params.id, detail: { trigger: params.tid } });
  if (!(await removeTrigger(env.db, params.id, params.tid))) throw notFound('No such trigger');
  return noContent();
};
