// Not a route (leading underscore): parameter schemas shared by the app endpoints.
import { z } from 'zod';
import { ID_PATTERN } from '../../../lib/crypto/random.js';
import { envKeySchema } from '../../../lib/apps/schemas.js';
import { SERVICE_NAME } from '../../../lib/compose/index.js';

export const appId = z.string().regex(ID_PATTERN, 'not an app id');
export const appParams = z.object({ id: appId });
export const envKeyParams = z.object({ id: appId, key: envKeySchema });
export const serviceParams = z.object({ id: appId, name: z.string().regex(SERVICE_NAME, 'not a service name') });
export type AppParams = z.infer<typeof appParams>;
export type ServiceParams = z.infer<typeof serviceParams>;

import { json } from '../../../lib/http/respond.js';
import { getApp } from '../../../lib/apps/store.js';
import { lifecycle, type Lifecycle } from '../../../lib/apps/ops.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

/** start/stop/restart of a whole app (`perService` false) or of one of its services. */
export function lifecycleRoute(action: Lifecycle, perService: boolean): { POST: Handler; schema: HandlerModule['schema'] } {
  return {
    schema: { params: perService ? serviceParams : appParams },
    POST: async (_req, { env, params, audit }) => {
      const app = await getApp(env.db, params.id);
      const service: string | undefined = perService ? params.name : undefined;
      audit({ action: `app.${action}`, target: app.id, detail: service ? { service } : undefined });
      return json({ containers: await lifecycle(env, app, action, service) });
    },
  };
}
