import { json } from '../../../../lib/http/respond.js';
import { getApp } from '../../../../lib/apps/store.js';
import { probeRepository } from '../../../../lib/apps/probe.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

export const POST: Handler<AppParams> = async (_req, { env, params }) => json(await probeRepository(env, await getApp(env.db, params.id), 'compose'));
