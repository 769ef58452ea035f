import { json, noContent } from '../../../../../lib/http/respond.js';
import { notFound } from '../../../../../lib/http/errors.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { hasWebhookSecret, removeWebhookSecret } from '../../../../../lib/webhooks/store.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

export const PROVIDERS = ['github', 'gitea', 'forgejo', 'gitlab', 'bitbucket'];

// The URL comes from configuration only: a request's Host header is whatever the client sent, and
// an operator pasting a URL built from it would send the forge's deliveries (and signatures) there.
export const GET: Handler<AppParams> = async (_req, { env, params }) => {
  await getApp(env.db, params.id);
  const path = `/webhooks/${params.id}`;
  const base = env.config.publicUrl ?? (env.config.controlDomain ? `https://${env.config.controlDomain}` : null);
  const secret_set = await hasWebhookSecret(env.db, params.id);
  if (base) return json({ url: `${base}${path}`, secret_set, providers: PROVIDERS });
  return json({
    url: path,
    url_hint: 'The control plane does not know its public address: set SVC_PUBLIC_URL (or SVC_BASE_DOMAIN) to see the full URL; until then, prefix this path with the address your forge reaches the control plane at.',
    secret_set,
    providers: PROVIDERS,
  });
};

export const DELETE: Handler<AppParams> = async (_req, { env, params, audit }) => {
  await getApp(env.db, params.id);
  audit({ action: 'app.webhook_removed', target: params.id });
  if (!(await removeWebhookSecret(env.db, params.id))) throw notFound('No webhook secret is set');
  return noContent();
};
