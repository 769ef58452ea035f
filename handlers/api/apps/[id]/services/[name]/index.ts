import type { z } from 'zod';
import { json } from '../../../../../../lib/http/respond.js';
import { servicePatchSchema } from '../../../../../../lib/apps/schemas.js';
import { getApp, patchServiceSettings } from '../../../../../../lib/apps/store.js';
import { ensureKnownService } from '../../../../../../lib/apps/ops.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { serviceParams, type ServiceParams } from '../../../_shared.js';

export const schema: HandlerModule['schema'] = { params: serviceParams, body: { PATCH: servicePatchSchema } };

// Settings are kept even for a service that has no container now (stopped, or removed by a failed
// deployment): the next deployment uses them. A name the app never had is a 404.
export const PATCH: Handler<ServiceParams, z.infer<typeof servicePatchSchema>> = async (_req, { env, params, body, audit }) => {
  const app = await getApp(env.db, params.id);
  await ensureKnownService(env, app, params.name);
  const settings = await patchServiceSettings(env.db, params.id, params.name, body);
  audit({ action: 'app.service_updated', target: params.id, detail: { service: params.name, ...settings } });
  return json({ name: params.name, ...settings });
};
