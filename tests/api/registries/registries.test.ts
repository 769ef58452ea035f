// Registry credentials through the API, in-process, against a real registry (Debian's
// docker-registry with bcrypt htpasswd on loopback; no engine needed): the password is sealed to
// its row and in no answer or audit entry, create and change need a step-up, hosts pass the
// self-hosted guard (link-local and the control plane's own endpoints refused, loopback allowed),
// Docker Hub's names are one registry, and the test call logs in against /v2/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { ADMIN } from '../../_support/server.js';
import { needRegistry, startRegistry, type TestRegistry } from '../../_support/registry.js';
import { registryBinding } from '#lib/registries/model.js';
import { SEALED_COLUMNS } from '#lib/instance/sealed-rows.js';
import type { SvcClient } from '../../../client/index.js';

let app: TestApp;
let c: SvcClient;
let reg: TestRegistry | null = null;

before(async () => {
  app = await startTestApp({ SVC_PORT: '9393' });
  c = await typedClient(app);
});
after(async () => {
  await reg?.stop();
  await app.stop();
});

async function stepUp(): Promise<void> {
  const r = await c.POST('/api/auth/step-up', { body: { password: ADMIN.password } });
  assert.equal(r.response.status, 200);
}

async function registry(t: Parameters<typeof needRegistry>[0]): Promise<TestRegistry | null> {
  if (!(await needRegistry(t))) return null;
  reg ??= await startRegistry();
  return reg;
}

test('storing credentials needs a step-up; the password is sealed to its row and never answered', async () => {
  const body = { host: 'registry.example:5000', username: 'ci', password: 'hunter2-registry-pw' };
  const refused = await c.POST('/api/registries', { body });
  assert.equal(refused.response.status, 403);
  assert.equal((refused.error as { code: string }).code, 'step_up_required');
  await stepUp();
  const made = await c.POST('/api/registries', { body });
  assert.equal(made.response.status, 201);
  const r = made.data!.registry;
  assert.equal(r.host, 'registry.example:5000');
  assert.equal(r.username, 'ci');
  assert.equal(r.last_used_at, null);
  const row = await app.env.db
    .selectFrom('registries')
    .selectAll()
    .where('id', '=', r.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.password_sealed.includes(body.password), false);
  assert.equal(app.env.sealer.open(row.password_sealed, registryBinding(r.id)), body.password);
  // Bound to the row: the same envelope does not open as another row's.
  assert.throws(() => app.env.sealer.open(row.password_sealed, registryBinding('another')));
  assert.ok(SEALED_COLUMNS.some((s) => s.table === 'registries' && s.column === 'password_sealed'));

  const listed = await c.GET('/api/registries');
  assert.ok(listed.data!.items.some((i) => i.id === r.id));
  const audit = await c.GET('/api/audit', { params: { query: { limit: 50 } } });
  const everything = JSON.stringify([made.data, listed.data, audit.data]);
  assert.equal(everything.includes(body.password), false);
  assert.ok(audit.data!.items.some((e) => e.action === 'POST /api/registries' && e.target.id === r.id));

  // One host, one set: 409, whatever the letter case.
  const again = await c.POST('/api/registries', { body: { ...body, host: 'REGISTRY.example:5000' } });
  assert.equal(again.response.status, 409);
  const del = await c.DELETE('/api/registries/{id}', { params: { path: { id: r.id } } });
  assert.equal(del.response.status, 204);
  assert.equal(
    (await c.DELETE('/api/registries/{id}', { params: { path: { id: r.id } } })).response.status,
    404,
  );
});

test("Docker Hub's names are one registry: docker.io", async () => {
  await stepUp();
  const hub = await c.POST('/api/registries', {
    body: { host: 'index.docker.io', username: 'me', password: 'hub-token-1234' },
  });
  assert.equal(hub.response.status, 201);
  assert.equal(hub.data!.registry.host, 'docker.io');
  const twin = await c.POST('/api/registries', {
    body: { host: 'registry-1.docker.io', username: 'me', password: 'hub-token-1234' },
  });
  assert.equal(twin.response.status, 409);
  // An unqualified image is Docker Hub's: the engine's credential lookup finds this login for it.
  const login = await app.env.engine.credentials!.forReference('nginx:1.27');
  assert.equal(login?.id, hub.data!.registry.id);
  assert.equal(login?.serverAddress, 'https://index.docker.io/v1/');
  assert.equal(await app.env.engine.credentials!.forReference('ghcr.io/team/app:1'), null);
  await c.DELETE('/api/registries/{id}', { params: { path: { id: hub.data!.registry.id } } });
});

test('hosts: bad forms are 400 naming the field; link-local and the control plane are refused; loopback and private allowed', async () => {
  await stepUp();
  const post = (host: string) => c.POST('/api/registries', { body: { host, username: 'u', password: 'p' } });
  for (const host of [
    'https://registry.example',
    'nodots',
    'registry.example:99999',
    'a b.example',
    'x.example/path',
  ]) {
    const r = await post(host);
    assert.equal(r.response.status, 400, host);
    assert.equal((r.error as { details: Array<{ field: string }> }).details[0]!.field, 'host', host);
  }
  for (const [host, why] of [
    ['169.254.169.254:5000', /link-local/],
    ['127.0.0.1:9393', /control plane's own endpoint/],
    ['127.0.0.1:2019', /control plane's own endpoint/],
  ] as const) {
    const r = await post(host);
    assert.equal(r.response.status, 400, host);
    assert.match((r.error as { error: string }).error, why, host);
  }
  for (const host of ['127.0.0.1:5000', '10.1.2.3:5000', 'localhost:5001']) {
    const r = await post(host);
    assert.equal(r.response.status, 201, `${host}: ${JSON.stringify(r.error)}`);
    await c.DELETE('/api/registries/{id}', { params: { path: { id: r.data!.registry.id } } });
  }
  // A pull from a refused host never reaches the engine either.
  await assert.rejects(app.env.engine.credentials!.admit('169.254.169.254:80/x:1'), /link-local/);
});

test('the test call logs in against /v2/: ok with the password, "authentication failed" without it in the answer', async (t) => {
  const r = await registry(t);
  if (!r) return;
  await stepUp();
  const made = await c.POST('/api/registries', {
    body: { host: r.host, username: r.username, password: r.password },
  });
  assert.equal(made.response.status, 201);
  const id = made.data!.registry.id;
  const ok = await c.POST('/api/registries/{id}/test', { params: { path: { id } } });
  assert.deepEqual(ok.data, { ok: true });
  const after1 = await c.GET('/api/registries');
  assert.ok(after1.data!.items.find((i) => i.id === id)!.last_used_at);

  const wrong = `${r.password}-wrong`;
  const patched = await c.PATCH('/api/registries/{id}', {
    params: { path: { id } },
    body: { password: wrong },
  });
  assert.equal(patched.response.status, 200);
  const bad = await c.POST('/api/registries/{id}/test', { params: { path: { id } } });
  assert.deepEqual(bad.data, { ok: false, error: `registry ${r.host}: authentication failed` });
  const audit = await c.GET('/api/audit', { params: { query: { limit: 50 } } });
  const everything = JSON.stringify([patched.data, bad.data, audit.data]);
  for (const secret of [wrong, r.password]) assert.equal(everything.includes(secret), false);
  assert.equal(r.log().includes(wrong), false);
  await c.DELETE('/api/registries/{id}', { params: { path: { id } } });
});

test('changing credentials needs a step-up too; a refused new host leaves the stored one', async () => {
  await stepUp();
  const made = await c.POST('/api/registries', {
    body: { host: 'registry.example:5050', username: 'ci', password: 'pw-1234' },
  });
  const id = made.data!.registry.id;
  // A fresh token has no step-up of its own.
  const other = await typedClient(app);
  const r = await other.PATCH('/api/registries/{id}', { params: { path: { id } }, body: { username: 'x' } });
  assert.equal(r.response.status, 403);
  assert.equal((r.error as { code: string }).code, 'step_up_required');
  const moved = await c.PATCH('/api/registries/{id}', {
    params: { path: { id } },
    body: { host: '169.254.1.1:5000' },
  });
  assert.equal(moved.response.status, 400);
  assert.equal(
    (await c.GET('/api/registries')).data!.items.find((i) => i.id === id)!.host,
    'registry.example:5050',
  );
  await c.DELETE('/api/registries/{id}', { params: { path: { id } } });
});
