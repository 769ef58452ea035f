// Inbound webhooks, triggers and deploy keys, in-process: the URL to paste, deliveries in the
// forges' formats with right and tampered signatures (every refusal, nothing queued), trigger globs,
// a deploy key generated, regenerated and removed. Pushes that deploy need the engine:
// tests/engine/webhooks-api.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { adminClient, Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { githubPush, githubPing, ZERO } from '../../unit/webhooks/_payloads.js';

let s: TestApp;
let c: Client;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
});
after(async () => {
  await s?.stop();
});

const uniq = () => `w-${Math.random().toString(36).slice(2, 8)}`;

async function gitApp(
  repo_url = 'ssh://git@127.0.0.1:1/srv/app.git',
  branch = 'main',
): Promise<{ id: string; name: string }> {
  const name = uniq();
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'git', repo_url, branch } });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

let deliveries = 0;
function github(secret: string | null, event: string, payload: unknown, extra: Record<string, string> = {}) {
  const body = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': `d-${++deliveries}-${Date.now()}`,
  };
  if (secret !== null)
    headers['x-hub-signature-256'] = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
  return { body, headers: { ...headers, ...extra } };
}

/** GET with a Host header of our choosing (the request helper keeps a Host it is given). */
async function getWithHost(
  app: TestApp,
  client: Client,
  path: string,
  host: string,
): Promise<{ status: number; text: string; body: any }> {
  const res = await app.request(path, { headers: { host, cookie: client.cookieHeader() } });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

async function deliver(appId: string, d: { body: Buffer; headers: Record<string, string> }) {
  const res = await s.request(`/webhooks/${appId}`, {
    method: 'POST',
    headers: d.headers,
    body: new Uint8Array(d.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

test('webhook config: URL to paste, secret shown once at rotation and sealed at rest, removal', async () => {
  const app = await gitApp();
  // No public URL configured: a path and a hint, never an origin taken from the Host header.
  const g = await getWithHost(s, c, `/api/apps/${app.id}/webhook`, 'attacker.example');
  assert.equal(g.status, 200, g.text);
  assert.equal(g.body.url, `/webhooks/${app.id}`);
  assert.match(g.body.url_hint, /SVC_PUBLIC_URL/);
  assert.doesNotMatch(g.text, /attacker/);
  assert.equal(g.body.secret_set, false);
  assert.ok(g.body.providers.includes('github'));
  const r1 = await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`);
  const r2 = await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`);
  assert.notEqual(r1.body.secret, r2.body.secret);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/webhook`)).body.secret_set, true);
  const row = await s.env.db
    .selectFrom('app_webhooks')
    .selectAll()
    .where('app_id', '=', app.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.secret_sealed.includes(r2.body.secret), false);
  // The old secret stopped working at rotation.
  assert.equal((await deliver(app.id, github(r1.body.secret, 'ping', githubPing))).status, 401);
  assert.equal((await deliver(app.id, github(r2.body.secret, 'ping', githubPing))).status, 200);
  assert.equal((await c.req('DELETE', `/api/apps/${app.id}/webhook`)).status, 204);
  assert.equal((await deliver(app.id, github(r2.body.secret, 'ping', githubPing))).status, 401);
  const audit = JSON.stringify((await c.req('GET', '/api/audit?limit=50')).body);
  assert.ok(audit.includes('app.webhook_secret_rotated'));
  assert.equal(audit.includes(r2.body.secret), false);
});

test('the webhook URL comes from SVC_PUBLIC_URL, else from the control domain, whatever Host the request carries', async () => {
  for (const [vars, base] of [
    [{ SVC_PUBLIC_URL: 'https://paas.example.net/' }, 'https://paas.example.net'],
    [{ SVC_PUBLIC_URL: 'http://10.0.0.5:9393/svc' }, 'http://10.0.0.5:9393/svc'],
    [{ SVC_BASE_DOMAIN: 'apps.example.org' }, 'https://svc.apps.example.org'],
    [
      { SVC_BASE_DOMAIN: 'apps.example.org', SVC_CONTROL_DOMAIN: 'panel.example.org' },
      'https://panel.example.org',
    ],
  ] as const) {
    const other = await startTestApp(vars);
    try {
      const oc = await adminClient(other);
      const created = await oc.req('POST', '/api/apps', {
        name: uniq(),
        source: { type: 'git', repo_url: 'https://git.example/r.git', branch: 'main' },
      });
      assert.equal(created.status, 201, created.text);
      const id = created.body.app.id;
      const g = await getWithHost(other, oc, `/api/apps/${id}/webhook`, 'attacker.example');
      assert.equal(g.status, 200, g.text);
      assert.equal(g.body.url, `${base}/webhooks/${id}`, JSON.stringify(vars));
      assert.equal(g.body.url_hint, undefined);
    } finally {
      await other.stop();
    }
  }
});

test('deliveries: one 401 for every authentication failure, 413 over 1 MiB, compressed refused, bad payloads 400, nothing queued', async () => {
  const app = await gitApp();
  const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const noSecretApp = await gitApp();
  const push = githubPush('refs/heads/feature-x');
  const failures = [
    await deliver(app.id, github(secret + 'x', 'push', push)),
    await deliver(app.id, github(null, 'push', push)),
    await deliver(noSecretApp.id, github(secret, 'push', push)),
    await deliver('01m7xsp88xare7pbe7126vxpxd', github(secret, 'push', push)),
    await deliver('not-an-id', github(secret, 'push', push)),
    await deliver(app.id, github(secret, 'push', push, { 'x-hub-signature-256': 'sha256=abcd' })),
    await deliver(
      app.id,
      github(secret, 'push', push, { 'x-hub-signature-256': 'sha256=' + 'z'.repeat(64) }),
    ),
  ];
  const tampered = github(secret, 'push', push);
  tampered.body = Buffer.from(tampered.body.toString().replace('feature-x', 'main'));
  failures.push(await deliver(app.id, tampered));
  for (const f of failures) {
    assert.equal(f.status, 401);
    assert.deepEqual(f.body, failures[0]!.body);
  }
  const big = github(secret, 'push', { ...push, pad: 'x'.repeat(1_100_000) });
  assert.equal((await deliver(app.id, big)).status, 413);
  const gz = github(secret, 'push', push, { 'content-encoding': 'gzip' });
  gz.body = gzipSync(gz.body);
  assert.equal((await deliver(app.id, gz)).status, 400);
  assert.equal((await deliver(app.id, github(secret, 'push', 'not json {'))).status, 400);
  for (const ref of ['refs/heads/main;id', 'refs/heads/-x', 'refs/heads/a..b', 'refs/heads/$(id)']) {
    const r = await deliver(app.id, github(secret, 'push', githubPush(ref)));
    assert.equal(r.status, 400, ref);
  }
  assert.equal((await deliver(app.id, github(secret, 'ping', githubPing))).status, 200);
  const ignored = await deliver(app.id, github(secret, 'push', githubPush('refs/heads/feature-x')));
  assert.equal(ignored.status, 200);
  assert.ok(ignored.body.ignored);
  const deletion = await deliver(app.id, github(secret, 'push', githubPush('refs/heads/main', ZERO)));
  assert.equal(deletion.status, 200);
  assert.ok(deletion.body.ignored);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items.length, 0);
});

test('triggers: push and tag globs, validated, listed and removed', async () => {
  const app = await gitApp();
  const t1 = await c.req('POST', `/api/apps/${app.id}/triggers`, { event: 'push', pattern: 'release/*' });
  assert.equal(t1.status, 201);
  assert.deepEqual(
    { ...t1.body, id: undefined },
    { id: undefined, event: 'push', pattern: 'release/*', enabled: true },
  );
  assert.equal(
    (await c.req('POST', `/api/apps/${app.id}/triggers`, { event: 'tag', pattern: 'v*' })).status,
    201,
  );
  assert.equal(
    (await c.req('POST', `/api/apps/${app.id}/triggers`, { event: 'branch', pattern: 'x' })).status,
    400,
  );
  assert.equal(
    (await c.req('POST', `/api/apps/${app.id}/triggers`, { event: 'push', pattern: 'a\u0001b' })).status,
    400,
  );
  assert.equal((await c.req('GET', `/api/apps/${app.id}/triggers`)).body.items.length, 2);
  assert.equal((await c.req('DELETE', `/api/apps/${app.id}/triggers/${t1.body.id}`)).status, 204);
  assert.equal((await c.req('DELETE', `/api/apps/${app.id}/triggers/${t1.body.id}`)).status, 404);
  const spec = (await c.req('GET', `/api/apps/${app.id}/export`)).body;
  assert.deepEqual(spec.triggers, [{ event: 'tag', pattern: 'v*' }]);
});

test('deploy key: generated on demand, OpenSSH public key with its SHA256 fingerprint, private half sealed, regenerate, delete', async () => {
  const app = await gitApp();
  assert.equal((await c.req('GET', `/api/apps/${app.id}/ssh-key`)).status, 404);
  const k1 = await c.req('POST', `/api/apps/${app.id}/ssh-key/regenerate`);
  assert.equal(k1.status, 201);
  assert.match(k1.body.public_key, /^ssh-ed25519 AAAA[A-Za-z0-9+/=]+ svc-/);
  assert.match(k1.body.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/ssh-key`)).body, k1.body);
  const row = await s.env.db
    .selectFrom('app_ssh_keys')
    .selectAll()
    .where('app_id', '=', app.id)
    .executeTakeFirstOrThrow();
  assert.ok(row.private_sealed.startsWith('v1.'));
  assert.equal(row.private_sealed.includes('PRIVATE KEY'), false);
  const k2 = await c.req('POST', `/api/apps/${app.id}/ssh-key/regenerate`);
  assert.notEqual(k2.body.fingerprint, k1.body.fingerprint);
  assert.equal((await c.req('DELETE', `/api/apps/${app.id}/ssh-key`)).status, 204);
  assert.equal((await c.req('POST', `/api/apps/${app.id}/ssh-key/test-connection`)).status, 404);
});
