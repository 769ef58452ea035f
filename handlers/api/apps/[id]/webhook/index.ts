import { json, noContent } from '../../../../../lib/http/respond.js';
import { notFound } from '../../../../../lib/http/errors.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { hasWebhookSecret, removeWebhookSecret } from '../../../../../lib/webhooks/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

export const PROVIDERS = ['github', 'gitea', 'forgejo', 'gitlab', 'bitbucket'];

export const GET: Handler<AppParams> = async (request, { env, params }) => {
  await getApp(env.db, params.id);
  const origin = new URL(request.url).origin;
  return json({ url: `${origin}/webhooks/${params.id}`, secret_set: await hasWebhookSecret(env.db, params.id), providers: PROVIDERS });
};

export const DELETE: Handler<AppParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  audit({ action: 'app.webhook_removed', target: params.id });
  if (!(await removeWebhookSecret(env.db, params.id))) throw notFound('No webhook secret is set');
  return noContent();
};
