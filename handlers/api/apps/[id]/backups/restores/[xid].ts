import { json } from '../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { getRestore } from '../../../../../../lib/backups/store.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { restoreParams } from '../_schemas.js';
import type { z } from 'zod';

export const schema: HandlerModule['schema'] = { params: restoreParams };

export const GET: Handler<z.infer<typeof restoreParams>> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  return json({ restore: await getRestore(env, params.id, params.xid) });
};
