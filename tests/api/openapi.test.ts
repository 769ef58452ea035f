// The OpenAPI document: fresh, complete, valid, and true to what the server really answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';
import { openApiPath } from '../../runtime/openapi.js';
import { METHODS } from '#lib/http/handler.js';
import { createClient } from '../../client/index.js';
import { adminClient, apiToken, Client } from '../_support/server.js';
import { startTestApp, type TestApp } from '../_support/request.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const doc = JSON.parse(readFileSync(root + 'api/openapi.json', 'utf8'));

test('the committed document and client types match the routes (npm run api regenerates them)', async () => {
  await run(process.execPath, ['scripts/gen-openapi.mjs', '--check'], { cwd: root });
});

test('every route and method of the route table is in the document, with its policy', async () => {
  const missing: string[] = [];
  let ops = 0;
  for (const r of routes) {
    const mod = await routeModule(r);
    for (const m of METHODS) {
      const h = mod[m];
      if (!h) continue;
      ops++;
      const op = doc.paths[openApiPath(r.pattern)]?.[m.toLowerCase()];
      if (!op) {
        missing.push(`${m} ${r.pattern}`);
        continue;
      }
      assert.equal(op['x-step-up'] === true, h.spec.stepUp === true, `${m} ${r.pattern}: x-step-up`);
      if (h.spec.stepUp)
        assert.match(op.description, /step-up/, `${m} ${r.pattern}: the description says so`);
      const auth = h.spec.auth ?? 'operator';
      if (auth === 'public') assert.deepEqual(op.security, [], `${m} ${r.pattern} is public`);
      else if (auth === 'metrics') assert.deepEqual(op.security, [{ metricsToken: [] }]);
      else assert.equal(op.security, undefined, `${m} ${r.pattern} needs the document's default security`);
      for (const status of Object.keys(h.spec.responses))
        assert.ok(op.responses[status], `${m} ${r.pattern} documents ${status}`);
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(ops >= 50, `only ${ops} operations`);
  // Nothing documented that the table does not serve.
  const served = new Set(routes.map((r) => openApiPath(r.pattern)));
  assert.deepEqual(
    Object.keys(doc.paths).filter((p) => !served.has(p)),
    [],
  );
  assert.ok(doc.paths['/api/ws'].get['x-websocket'], 'the WebSocket route is described');
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), [
    'bearer',
    'csrf',
    'metricsToken',
    'session',
  ]);
});

test('redocly lints the document with zero errors', { timeout: 120_000 }, async () => {
  const r = await run(
    process.execPath,
    ['node_modules/@redocly/cli/bin/cli.js', 'lint', '--format=json', 'api/openapi.json'],
    { cwd: root, maxBuffer: 16 << 20 },
  ).catch((e) => e);
  const out = JSON.parse(r.stdout);
  const errors = out.problems.filter((p: { severity: string }) => p.severity === 'error');
  assert.deepEqual(errors, []);
  assert.equal(r.code ?? 0, 0);
});

// Answers recorded from a real server, checked against the documented schema of their status.
let s: TestApp;
before(async () => {
  s = await startTestApp();
});
after(async () => {
  await s?.stop();
});

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ ...doc, $id: 'openapi.json' });

function schemaFor(path: string, method: string, status: number): Record<string, unknown> | null {
  const op = doc.paths[path]?.[method.toLowerCase()];
  assert.ok(op, `${method} ${path} is documented`);
  let res = op.responses[String(status)] ?? op.responses.default;
  assert.ok(res, `${method} ${path} documents ${status}`);
  if (res.$ref) res = doc.components.responses[res.$ref.split('/').pop()];
  return res.content?.['application/json']?.schema ?? null;
}

function conforms(path: string, method: string, r: { status: number; body: unknown }) {
  const schema = schemaFor(path, method, r.status);
  if (!schema) return;
  const validate = ajv.compile({ $ref: 'openapi.json' + schema.$ref });
  assert.ok(
    validate(r.body),
    `${method} ${path} ${r.status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(r.body).slice(0, 400)}`,
  );
}

test('real answers match the documented response schemas: login, apps, sessions, tokens, audit, errors', async () => {
  const anon = new Client(s.url);
  const recorded: [string, string, { status: number; body: unknown }][] = [];
  const rec = async (c: Client, method: string, url: string, path: string, body?: unknown) => {
    const r = await c.req(method, url, body);
    recorded.push([path, method, r]);
    return r;
  };
  await rec(anon, 'GET', '/api/setup/status', '/api/setup/status');
  await rec(anon, 'GET', '/api/health', '/api/health');
  await rec(anon, 'GET', '/api/apps', '/api/apps');
  const c = await adminClient(s);
  await rec(new Client(s.url), 'POST', '/api/auth/login', '/api/auth/login', {
    username: 'admin',
    password: 'wrong password here',
  });
  await rec(c, 'GET', '/api/auth/me', '/api/auth/me');
  await rec(c, 'GET', '/api/apps', '/api/apps');
  const created = await rec(c, 'POST', '/api/apps', '/api/apps', {
    name: 'oas-conform',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(created.status, 201);
  const id = (created.body as { app: { id: string } }).app.id;
  await rec(c, 'POST', '/api/apps', '/api/apps', {
    name: 'oas-conform',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  await rec(c, 'POST', '/api/apps', '/api/apps', {
    name: 'Bad Name',
    source: { type: 'image', image: 'nginx' },
  });
  await rec(c, 'GET', '/api/apps', '/api/apps');
  await rec(c, 'GET', `/api/apps/${id}`, '/api/apps/{id}');
  await rec(c, 'GET', '/api/apps/01m7xsp88xare7pbe7126vxpxd', '/api/apps/{id}');
  await rec(c, 'PUT', `/api/apps/${id}/env`, '/api/apps/{id}/env', {
    items: [
      { key: 'A', value: '1', secret: false },
      { key: 'B', value: '2' },
    ],
  });
  await rec(c, 'GET', `/api/apps/${id}/env`, '/api/apps/{id}/env');
  await rec(c, 'GET', `/api/apps/${id}/export`, '/api/apps/{id}/export');
  await rec(c, 'POST', `/api/apps/${id}/triggers`, '/api/apps/{id}/triggers', {
    event: 'push',
    pattern: 'main',
  });
  await rec(c, 'GET', `/api/apps/${id}/webhook`, '/api/apps/{id}/webhook');
  await rec(c, 'GET', `/api/apps/${id}/deployments`, '/api/apps/{id}/deployments');
  await rec(c, 'DELETE', `/api/apps/${id}`, '/api/apps/{id}');
  await rec(c, 'GET', '/api/auth/sessions', '/api/auth/sessions');
  await rec(c, 'GET', '/api/deployments/active', '/api/deployments/active');
  await rec(c, 'GET', '/api/instance/deploy-concurrency', '/api/instance/deploy-concurrency');
  await rec(c, 'GET', '/api/security/posture', '/api/security/posture');
  await rec(c, 'GET', '/api/security/traffic', '/api/security/traffic');
  await rec(c, 'GET', '/api/security/firewall', '/api/security/firewall');
  await apiToken(c, 'oas');
  await rec(c, 'GET', '/api/auth/api-tokens', '/api/auth/api-tokens');
  await rec(c, 'GET', '/api/audit?limit=5', '/api/audit');
  // The routes main added before the conversion: their envelopes and the shapes described so far.
  await rec(c, 'GET', '/api/settings/notifications', '/api/settings/notifications');
  await rec(c, 'GET', '/api/domains', '/api/domains');
  const redirect = await rec(c, 'POST', '/api/domains', '/api/domains', {
    hostname: 'old.example.com',
    redirect_to: 'new.example.com',
  });
  assert.equal(redirect.status, 201, JSON.stringify(redirect.body));
  const did = (redirect.body as { domain: { id: string } }).domain.id;
  await rec(c, 'GET', `/api/domains/${did}`, '/api/domains/{id}');
  await rec(c, 'GET', '/api/domains', '/api/domains');
  await rec(c, 'DELETE', `/api/domains/${did}`, '/api/domains/{id}');
  await rec(c, 'GET', '/api/addons', '/api/addons');
  await rec(c, 'GET', '/api/databases/engines', '/api/databases/engines');
  const statuses = new Set(recorded.map(([, , r]) => r.status));
  for (const want of [200, 201, 400, 401, 403, 404, 409])
    assert.ok(statuses.has(want), `a ${want} was recorded (${[...statuses]})`);
  for (const [path, method, r] of recorded) conforms(path, method, r);
});

test('real answers match the documented schemas: instance, metrics, add-ons, databases, backups', async () => {
  const c = await adminClient(s);
  const recorded: [string, string, { status: number; body: unknown }][] = [];
  const rec = async (method: string, url: string, path: string, body?: unknown) => {
    const r = await c.req(method, url, body);
    recorded.push([path, method, r]);
    return r;
  };
  const created = await rec('POST', '/api/apps', '/api/apps', {
    name: 'oas-data',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  const appId = (created.body as { app: { id: string } }).app.id;
  // Databases and runs are made by the engine in their own tests (tests/engine/data-*.test.ts);
  // here rows like theirs go in directly, so the real views and routes answer without it.
  const at = new Date().toISOString();
  await s.env.db
    .insertInto('app_databases')
    .values({
      id: 'oasdb000000000000000000001',
      app_id: appId,
      engine: 'postgres',
      version: '16',
      name: 'app',
      username: 'app',
      password_sealed: 'x',
      host: 'db-oasdb000000000000000000001',
      port: 5432,
      env_var: 'DATABASE_URL',
      container: 'svc-oas-db',
      volume: 'svc-oas-db-data',
      status: 'ready',
      error: null,
      created_at: at,
    })
    .execute();
  const made = await rec('POST', `/api/apps/${appId}/backups`, '/api/apps/{id}/backups', {
    source: { type: 'database', database_id: 'oasdb000000000000000000001' },
    schedule: '0 3 * * *',
    keep_last: 3,
    destination: { type: 'local' },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const bid = (made.body as { backup: { id: string } }).backup.id;
  await s.env.db
    .insertInto('backup_runs')
    .values({
      id: 'oasrun00000000000000000001',
      backup_id: bid,
      app_id: appId,
      status: 'failed',
      trigger: 'manual',
      artifact: null,
      artifact_removed: 0,
      size_bytes: null,
      sha256: null,
      error: 'dump failed',
      verified_at: null,
      verify_error: null,
      started_at: at,
      finished_at: at,
    })
    .execute();
  await s.env.db
    .insertInto('backup_restores')
    .values({
      id: 'oasrestore0000000000000001',
      run_id: 'oasrun00000000000000000001',
      app_id: appId,
      status: 'failed',
      error: 'no artifact',
      started_at: at,
      finished_at: at,
    })
    .execute();
  await rec('GET', '/api/instance/info', '/api/instance/info');
  await rec('GET', '/api/instance/disk', '/api/instance/disk');
  await rec('GET', '/api/host/metrics?range=1h', '/api/host/metrics');
  await rec('GET', `/api/apps/${appId}/metrics?range=6h`, '/api/apps/{id}/metrics');
  await rec('GET', '/api/addons', '/api/addons');
  await rec('GET', '/api/addons/gitea', '/api/addons/{id}');
  await rec('GET', '/api/addons/no-such-addon', '/api/addons/{id}');
  await rec('GET', '/api/databases/engines', '/api/databases/engines');
  await rec('GET', `/api/apps/${appId}/databases`, '/api/apps/{id}/databases');
  await rec(
    'GET',
    `/api/apps/${appId}/databases/oasdb000000000000000000001`,
    '/api/apps/{id}/databases/{dbid}',
  );
  await rec('GET', '/api/databases', '/api/databases');
  await rec('GET', `/api/apps/${appId}/backups`, '/api/apps/{id}/backups');
  await rec('GET', `/api/apps/${appId}/backups/${bid}/runs`, '/api/apps/{id}/backups/{bid}/runs');
  await rec(
    'GET',
    `/api/apps/${appId}/backups/runs/oasrun00000000000000000001`,
    '/api/apps/{id}/backups/runs/{rid}',
  );
  await rec(
    'GET',
    `/api/apps/${appId}/backups/restores/oasrestore0000000000000001`,
    '/api/apps/{id}/backups/restores/{xid}',
  );
  await rec('GET', '/api/backups', '/api/backups');
  for (const [path, method, r] of recorded) {
    if (!path.includes('no-such'))
      assert.ok(
        r.status < 300 || path === '/api/addons/{id}',
        `${method} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`,
      );
    conforms(path, method, r);
  }
  // The lists are not vacuous: each holds what was made above.
  const body = (path: string) =>
    recorded.find(([p, m]) => p === path && m === 'GET')![2].body as Record<string, unknown[]>;
  assert.equal(body('/api/apps/{id}/databases').items!.length, 1);
  assert.equal(body('/api/apps/{id}/backups').items!.length, 1);
  assert.equal(body('/api/apps/{id}/backups/{bid}/runs').items!.length, 1);
  assert.ok(body('/api/backups').failed_last_7d!.length >= 1);
  assert.ok(body('/api/addons').items!.length >= 8);
});

test('a wrong answer fails the conformance check (the check can fail)', () => {
  assert.throws(() =>
    conforms('/api/auth/me', 'GET', {
      status: 200,
      body: { user: { id: 'x', username: 'y' }, via: 'session' },
    }),
  );
  assert.throws(() => conforms('/api/apps', 'GET', { status: 200, body: { items: [], extra: true } }));
  assert.throws(() =>
    conforms('/api/domains/{id}', 'GET', {
      status: 200,
      body: { domain: { id: 'x', hostname: 'a.example.com' }, proxy: {} },
    }),
  );
  assert.throws(() =>
    conforms('/api/settings/notifications', 'GET', {
      status: 200,
      body: { items: [{ id: 'x', kind: 'email' }], events: [] },
    }),
  );
  // The shapes that were placeholders (any JSON) before: an extra or a missing field fails now.
  assert.throws(() => conforms('/api/instance/disk', 'GET', { status: 200, body: { images: 1 } }));
  assert.throws(() =>
    conforms('/api/databases/engines', 'GET', {
      status: 200,
      body: {
        items: [{ engine: 'postgres', versions: ['16'], default_version: '16', images: {}, port: 5432 }],
      },
    }),
  );
  assert.throws(() =>
    conforms('/api/backups', 'GET', {
      status: 200,
      body: { configs: [], failed_last_7d: [], uncovered: [], extra: 1 },
    }),
  );
  assert.throws(() =>
    conforms('/api/host/metrics', 'GET', {
      status: 200,
      body: { range: '1h', step_seconds: 10, points: [] },
    }),
  );
});

test('GET /api/openapi.json serves the document to an authenticated caller, and 401 to anyone else', async () => {
  assert.equal((await new Client(s.url).req('GET', '/api/openapi.json')).status, 401);
  const c = await adminClient(s);
  const r = await c.req('GET', '/api/openapi.json');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, doc);
});

test('the typed client lists apps and reads one with an API token', async () => {
  const c = await adminClient(s);
  const token = await apiToken(c, 'typed-client');
  const api = createClient(s.url, { token, fetch: s.fetch });
  const made = await api.POST('/api/apps', {
    body: { name: 'oas-client', source: { type: 'image', image: 'nginx:1.27' } },
  });
  assert.equal(made.response.status, 201);
  const id = made.data!.app.id;
  const list = await api.GET('/api/apps');
  assert.ok(list.data!.items.some((a) => a.id === id && a.name === 'oas-client'));
  const one = await api.GET('/api/apps/{id}', { params: { path: { id } } });
  assert.equal(one.data!.app.source.type, 'image');
  const missing = await api.GET('/api/apps/{id}', { params: { path: { id: '01m7xsp88xare7pbe7126vxpxd' } } });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.error!.code, 'not_found');
});

test("the documented audit entry is the contract's, and every entry's action names a documented method and path", async () => {
  const e = doc.components.schemas.AuditEntry;
  for (const f of [
    'id',
    'at',
    'actor',
    'action',
    'target',
    'ip',
    'outcome',
    'summary',
    'revertible',
    'reverted_at',
  ])
    assert.ok(e.required.includes(f), `AuditEntry requires ${f}`);
  assert.deepEqual(e.properties.actor.properties.type.enum, ['user', 'token', 'system']);
  assert.deepEqual(Object.keys(e.properties.actor.properties).sort(), ['id', 'name', 'owner_id', 'type']);
  assert.deepEqual(Object.keys(e.properties.target.properties).sort(), ['id', 'type']);
  assert.deepEqual(e.properties.outcome.enum, ['ok', 'error']);
  const params = doc.paths['/api/audit'].get.parameters as { name: string; description?: string }[];
  for (const name of ['actor', 'action', 'target', 'since', 'until'])
    assert.ok(params.find((p) => p.name === name)?.description, `the ${name} filter is documented`);

  // The conformance run above wrote entries of many routes (and refused sign-ins): each action is one the document has.
  const c = await adminClient(s);
  const items = (await c.req('GET', '/api/audit?limit=200')).body.items as { action: string }[];
  assert.ok(items.length > 5);
  for (const { action } of items) {
    const [method, path] = action.split(' ');
    assert.ok(doc.paths[path!]?.[method!.toLowerCase()], `${action} is a documented operation`);
  }
});
