import { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { getApp } from '../../../../lib/apps/store.js';
import { appMetrics } from '../../../../lib/series/answer.js';
import { SERVICE_NAME } from '../../../../lib/compose/index.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../_shared.js';

// `range` is checked by lib/series (its 400 lists the ranges there are).
const query = z.object({ range: z.string().max(16).optional(), service: z.string().regex(SERVICE_NAME, 'not a service name').optional() });
export const schema: HandlerModule['schema'] = { params: appParams, query };

/** Requests through the proxy to this app (or one service): oldest first, zero-filled, at most 500 points. */
export const GET: Handler<AppParams, unknown, z.infer<typeof query>> = async (_req, { env, params, query }) => {
  await getApp(env.db, params.id);
  return json(appMetrics(env, params.id, query));
};
