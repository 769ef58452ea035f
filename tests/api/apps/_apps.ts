// What the app tests written with the typed client share: an app from an image or from an
// unreachable git remote, step-up and its end, the audit entries of a change, and webhook
// deliveries signed as GitHub signs them (sent raw: a sender is not an API client).
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { ADMIN } from '../../_support/server.js';
import type { TestApp } from '../../_support/request.js';
import type { SvcClient } from '../../../client/index.js';

export const uniq = () => `g-${randomBytes(3).toString('hex')}`;

export async function imageApp(api: SvcClient): Promise<string> {
  const r = await api.POST('/api/apps', {
    body: { name: uniq(), source: { type: 'image', image: 'nginx:1.27' } },
  });
  assert.equal(r.response.status, 201, JSON.stringify(r.error));
  return r.data!.app.id;
}

/** An unreachable remote: a deployment a delivery queues fails at once, without the network. */
export async function gitApp(api: SvcClient): Promise<{ id: string; secret: string }> {
  const r = await api.POST('/api/apps', {
    body: {
      name: uniq(),
      source: { type: 'git', repo_url: 'ssh://git@127.0.0.1:1/srv/app.git', branch: 'main' },
    },
  });
  assert.equal(r.response.status, 201, JSON.stringify(r.error));
  const id = r.data!.app.id;
  const hook = await api.POST('/api/apps/{id}/webhook/regenerate', { params: { path: { id } } });
  return { id, secret: hook.data!.secret };
}

export async function stepUp(api: SvcClient): Promise<void> {
  const r = await api.POST('/api/auth/step-up', { body: { password: ADMIN.password } });
  assert.equal(r.response.status, 200);
}

/** Ends every session's and token's step-up, as if its five minutes had passed. */
export async function expireStepUp(app: TestApp): Promise<void> {
  await app.env.db.updateTable('sessions').set({ step_up_until: null }).execute();
  await app.env.db.updateTable('api_tokens').set({ step_up_until: null }).execute();
  const { invalidateCredentials } = await import('#lib/auth/cache.js');
  invalidateCredentials();
}

/** The entries of a change that went through, newest first (refused attempts are entries too). */
export async function entries(api: SvcClient, action: string, target: string) {
  const r = await api.GET('/api/audit', { params: { query: { action, target, limit: 50 } } });
  assert.equal(r.response.status, 200, JSON.stringify(r.error));
  return r.data!.items.filter((i) => i.outcome === 'ok');
}

export async function lastEntry(api: SvcClient, action: string, target: string) {
  const [entry] = await entries(api, action, target);
  assert.ok(entry, `an audit entry ${action}`);
  return entry;
}

export interface Delivery {
  body: Buffer;
  headers: Record<string, string>;
}

let deliveries = 0;
export function github(
  secret: string,
  event: string,
  payload: unknown,
  extra: Record<string, string> = {},
): Delivery {
  const body = Buffer.from(JSON.stringify(payload));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': `d-${++deliveries}-${randomBytes(4).toString('hex')}`,
    'x-hub-signature-256': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex'),
  };
  return { body, headers: { ...headers, ...extra } };
}

export async function deliver(app: TestApp, appId: string, d: Delivery) {
  const res = await app.request(`/webhooks/${appId}`, {
    method: 'POST',
    headers: d.headers,
    body: new Uint8Array(d.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
