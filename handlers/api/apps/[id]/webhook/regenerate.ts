import { json } from '../../../../../lib/http/respond.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { rotateWebhookSecret } from '../../../../../lib/webhooks/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

// The only time the secret is shown: it is sealed at rest and never listed.
export const POST: Handler<AppParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  const secret = await rotateWebhookSecret(env.db, env.sealer, params.id, env.now());
  audit({ action: 'app.webhook_secret_rotated', target: params.id });
  return json({ secret });
};
