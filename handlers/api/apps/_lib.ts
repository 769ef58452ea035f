// Not a route (leading underscore): parameter schemas and the lifecycle routes shared by the app endpoints.
import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { envKeySchema } from '#lib/apps/schemas.js';
import { SERVICE_NAME } from '#lib/compose/index.js';
import { getApp } from '#lib/apps/store.js';
import { lifecycle, type Lifecycle } from '#lib/apps/ops.js';
import { route } from '#lib/http/route.js';

export const appId = z.string().regex(ID_PATTERN, 'not an app id');
export const appParams = z.object({ id: appId });
export const envKeyParams = z.object({ id: appId, key: envKeySchema });
export const serviceParams = z.object({
  id: appId,
  name: z.string().regex(SERVICE_NAME, 'not a service name'),
});

const containers = z.object({ containers: z.array(z.string()) });

/** start/stop/restart of a whole app. */
export const appLifecycle = (action: Lifecycle) =>
  route(
    {
      summary: `${action[0]!.toUpperCase()}${action.slice(1)} every container of an app`,
      permission: 'app.deploy',
      params: appParams,
      responses: { 200: containers },
      audit: { action: `app.${action}`, target: (c) => c.params.id },
    },
    async (_req, { env, params, reply }) =>
      reply(200, { containers: await lifecycle(env, await getApp(env.db, params.id), action) }),
  );

/** start/stop/restart of one service of an app. */
export const serviceLifecycle = (action: Lifecycle) =>
  route(
    {
      summary: `${action[0]!.toUpperCase()}${action.slice(1)} one service of an app`,
      permission: 'app.deploy',
      params: serviceParams,
      responses: { 200: containers },
      audit: { action: `app.${action}`, target: (c) => c.params.id },
    },
    async (_req, { env, params, reply, audit }) => {
      audit({ detail: { service: params.name } });
      return reply(200, {
        containers: await lifecycle(env, await getApp(env.db, params.id), action, params.name),
      });
    },
  );
