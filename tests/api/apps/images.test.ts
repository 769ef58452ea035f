// An app's image settings through the API, in-process (the deployment queue is not running, so a
// queued deployment stays queued): `source.pull` and changing the image (audited with its diff,
// revertible, app.admin), `pull: true` on a deployment, and the deploy hook: made with a step-up
// and shown once, called without any credential, rate-limited per token, audited as the system
// naming the hook, revoked by a new one or a delete.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { ADMIN } from '../../_support/server.js';
import { HOOK_CALLS_PER_MINUTE } from '#lib/hooks/index.js';
import type { SvcClient } from '../../../client/index.js';

let app: TestApp;
let c: SvcClient;
let n = 0;

before(async () => {
  app = await startTestApp();
  c = await typedClient(app);
});
after(() => app.stop());

async function stepUp(client = c): Promise<void> {
  const r = await client.POST('/api/auth/step-up', { body: { password: ADMIN.password } });
  assert.equal(r.response.status, 200);
}

async function imageApp(image = 'registry.example:5000/team/app:1.4'): Promise<string> {
  const r = await c.POST('/api/apps', {
    body: { name: `img-${++n}`, source: { type: 'image', image } },
  });
  assert.equal(r.response.status, 201);
  return r.data!.app.id;
}

const hookPath = (url: string) => url.slice(url.indexOf('/hooks/deploy/'));

test('source.pull and the image: changed by PATCH, audited with the diff, revertible', async () => {
  const id = await imageApp();
  const patched = await c.PATCH('/api/apps/{id}', {
    params: { path: { id } },
    body: { source: { type: 'image', image: 'registry.example:5000/team/app:1.5', pull: 'always' } },
  });
  assert.equal(patched.response.status, 200);
  assert.deepEqual(patched.data!.app.source, {
    type: 'image',
    image: 'registry.example:5000/team/app:1.5',
    pull: 'always',
  });
  const bad = await c.PATCH('/api/apps/{id}', {
    params: { path: { id } },
    body: { source: { type: 'image', image: 'x:1', pull: 'sometimes' as 'always' } },
  });
  assert.equal(bad.response.status, 400);
  const audit = await c.GET('/api/audit', { params: { query: { limit: 20 } } });
  const entry = audit.data!.items.find((e) => e.action === 'PATCH /api/apps/{id}' && e.target.id === id)!;
  assert.equal(entry.revertible, true);
  const diff = await c.GET('/api/audit/{id}/diff', { params: { path: { id: entry.id } } });
  const rows = diff.data!.rows;
  assert.deepEqual(
    rows.find((r) => r.field === 'source.image'),
    {
      field: 'source.image',
      status: 'changed',
      before: 'registry.example:5000/team/app:1.4',
      after: 'registry.example:5000/team/app:1.5',
      masked: false,
    },
  );
  assert.equal(rows.find((r) => r.field === 'source.pull')?.status, 'added');
  const reverted = await c.POST('/api/audit/{id}/revert', { params: { path: { id: entry.id } }, body: {} });
  assert.equal(reverted.response.status, 200);
  const back = await c.GET('/api/apps/{id}', { params: { path: { id } } });
  assert.deepEqual(back.data!.app.source, { type: 'image', image: 'registry.example:5000/team/app:1.4' });
});

test('pull: true is recorded on the deployment; anything but a boolean is 400', async () => {
  const id = await imageApp();
  const d = await c.POST('/api/apps/{id}/deployments', { params: { path: { id } }, body: { pull: true } });
  assert.equal(d.response.status, 202);
  assert.equal(d.data!.deployment.pull, true);
  assert.equal(d.data!.deployment.image_digests, null);
  const bad = await app.request(`/api/apps/${id}/deployments`, {
    method: 'POST',
    headers: { authorization: (await tokenHeader()) ?? '', 'content-type': 'application/json' },
    body: JSON.stringify({ pull: 'yes' }),
  });
  assert.equal(bad.status, 400);
});

let token: string | null = null;
async function tokenHeader(): Promise<string | null> {
  if (!token) {
    await stepUp();
    const r = await c.POST('/api/auth/api-tokens', { body: { name: `raw-${++n}` } });
    token = r.data!.token;
  }
  return `Bearer ${token}`;
}

test('a deploy hook: step-up to make, shown once, called with no credential, audited as the system', async () => {
  const id = await imageApp();
  assert.deepEqual((await c.GET('/api/apps/{id}/deploy-hook', { params: { path: { id } } })).data, {
    exists: false,
    id: null,
    created_at: null,
    last_used_at: null,
  });
  const fresh = await typedClient(app);
  const refused = await fresh.POST('/api/apps/{id}/deploy-hook', { params: { path: { id } } });
  assert.equal(refused.response.status, 403);
  await stepUp();
  const made = await c.POST('/api/apps/{id}/deploy-hook', { params: { path: { id } } });
  assert.equal(made.response.status, 200);
  const path = hookPath(made.data!.url);
  const secret = path.split('/').pop()!;
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
  const info = (await c.GET('/api/apps/{id}/deploy-hook', { params: { path: { id } } })).data!;
  assert.equal(info.exists, true);
  assert.equal(JSON.stringify(info).includes(secret), false);

  // No cookie, no token: the URL is the credential.
  const called = await app.request(path, { method: 'POST' });
  assert.equal(called.status, 202);
  const { deployment_id } = (await called.json()) as { deployment_id: string };
  const dep = await c.GET('/api/apps/{id}/deployments/{did}', {
    params: { path: { id, did: deployment_id } },
  });
  assert.equal(dep.data!.deployment.trigger, 'hook');
  assert.equal(dep.data!.deployment.pull, true);
  // A second call while the first waits is not a 409: it takes the waiting one's place.
  const second = await app.request(path, { method: 'POST' });
  assert.equal(second.status, 202);
  const audit = await c.GET('/api/audit', { params: { query: { limit: 50 } } });
  const entry = audit.data!.items.find((e) => e.action === 'POST /hooks/deploy/{token}')!;
  assert.deepEqual(entry.actor, { type: 'system', id: null, name: `deploy-hook:${info.id}` });
  assert.equal(entry.target.id, id);
  assert.equal(JSON.stringify(audit.data).includes(secret), false);
  assert.ok((await c.GET('/api/apps/{id}/deploy-hook', { params: { path: { id } } })).data!.last_used_at);

  // A new hook revokes the old URL; unknown and malformed tokens are 404 alike.
  await stepUp();
  const remade = await c.POST('/api/apps/{id}/deploy-hook', { params: { path: { id } } });
  assert.notEqual(hookPath(remade.data!.url), path);
  for (const p of [path, `/hooks/deploy/${'a'.repeat(43)}`, '/hooks/deploy/short'])
    assert.equal((await app.request(p, { method: 'POST' })).status, 404, p);
  const del = await c.DELETE('/api/apps/{id}/deploy-hook', { params: { path: { id } } });
  assert.equal(del.response.status, 204);
  assert.equal((await app.request(hookPath(remade.data!.url), { method: 'POST' })).status, 404);
  assert.equal(
    (await c.DELETE('/api/apps/{id}/deploy-hook', { params: { path: { id } } })).response.status,
    404,
  );
});

test('a deploy hook is rate-limited per token (429 with Retry-After), other tokens unaffected', async () => {
  const a = await imageApp();
  const b = await imageApp();
  await stepUp();
  const hookA = hookPath(
    (await c.POST('/api/apps/{id}/deploy-hook', { params: { path: { id: a } } })).data!.url,
  );
  const hookB = hookPath(
    (await c.POST('/api/apps/{id}/deploy-hook', { params: { path: { id: b } } })).data!.url,
  );
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let i = 0; i < HOOK_CALLS_PER_MINUTE + 2; i++) {
    const r = await app.request(hookA, { method: 'POST' });
    statuses.push(r.status);
    if (r.status === 429) retryAfter = r.headers.get('retry-after');
  }
  assert.ok(statuses.includes(429), statuses.join(','));
  assert.ok(Number(retryAfter) >= 1);
  assert.equal((await app.request(hookB, { method: 'POST' })).status, 202);
});
