// Small hardening items played over the real server: strict bodies, /metrics closed to every
// method, the Authorization scheme's case, and an aborted upload logged as one info line.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import {
  startTestServer,
  adminClient,
  apiToken,
  memoryLogger,
  Client,
  ADMIN,
  type TestServer,
} from '../_support/server.js';
import { poll } from '../_support/wait.js';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
let s: TestServer;
let admin: Client;
const logged = memoryLogger('info');

before(async () => {
  s = await startTestServer({ SVC_METRICS_TOKEN: METRICS_TOKEN, SVC_LOG_LEVEL: 'info' }, { log: logged.log });
  admin = await adminClient(s);
  assert.equal((await admin.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
});
after(async () => {
  await s.stop();
});

test('an unknown body field is refused with 400 naming it, at the top and nested', async () => {
  const typo = await admin.req('POST', '/api/auth/api-tokens', { name: 'ci', expires_in: 3600 });
  assert.equal(typo.status, 400);
  assert.equal(typo.body.code, 'bad_request');
  assert.deepEqual(typo.body.details, [{ field: 'expires_in', message: 'unknown field' }]);
  assert.match(typo.body.error, /expires_in/);
  // Nothing was created by the refused request.
  const list = await admin.req('GET', '/api/auth/api-tokens');
  assert.equal(
    list.body.items.some((t: { name: string }) => t.name === 'ci'),
    false,
  );

  const login = await new Client(s.url).req('POST', '/api/auth/login', { ...ADMIN, remember: true });
  assert.equal(login.status, 400);
  assert.equal(login.body.details[0].field, 'remember');

  const nested = await admin.req('POST', '/api/apps', {
    name: 'strict-nested',
    source: { type: 'image', image: 'nginx:1.27', tag: 'x' },
  });
  assert.equal(nested.status, 400);
  assert.ok(
    nested.body.details.some((d: { field: string }) => d.field === 'source.tag'),
    JSON.stringify(nested.body),
  );
  assert.equal(
    (await admin.req('GET', '/api/apps')).body.items.some(
      (a: { name: string }) => a.name === 'strict-nested',
    ),
    false,
  );

  const app = await admin.req('POST', '/api/apps', {
    name: 'strict-env',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(app.status, 201, app.text);
  const env = await admin.req('PUT', `/api/apps/${app.body.app.id}/env`, {
    items: [{ key: 'A', value: 'x', sekret: true }],
  });
  assert.equal(env.status, 400);
  assert.equal(env.body.details[0].field, 'items.0.sekret');
  assert.deepEqual((await admin.req('GET', `/api/apps/${app.body.app.id}/env`)).body.items, []);
});

test('/metrics without the right token is a plain 404 for every method, never a 405', async () => {
  const c = new Client(s.url);
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
    for (const authorization of ['', 'Bearer wrong-token-0123456789', `Basic ${METRICS_TOKEN}`]) {
      const r = await c.req(method, '/metrics', undefined, { authorization });
      assert.equal(r.status, 404, `${method} with "${authorization}"`);
      assert.equal(r.headers.get('allow'), null);
      if (method !== 'HEAD') assert.equal(r.text, 'Not Found\n');
    }
  }
  // With the token the route is real: other methods get the usual 405.
  assert.equal(
    (await c.req('POST', '/metrics', undefined, { authorization: `Bearer ${METRICS_TOKEN}` })).status,
    405,
  );
});

test('the Authorization scheme is case-insensitive for API tokens and /metrics', async () => {
  const token = await apiToken(admin, 'scheme');
  for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
    const me = await new Client(s.url).req('GET', '/api/auth/me', undefined, {
      authorization: `${scheme} ${token}`,
    });
    assert.equal(me.status, 200, scheme);
    const m = await new Client(s.url).req('GET', '/metrics', undefined, {
      authorization: `${scheme} ${METRICS_TOKEN}`,
    });
    assert.equal(m.status, 200, scheme);
    assert.match(m.text, /svc_http_requests_total/);
  }
  assert.equal(
    (await new Client(s.url).req('GET', '/api/auth/me', undefined, { authorization: `Basic ${token}` }))
      .status,
    401,
  );
});

test('a client that aborts its request body is logged as one info line, not an error with a stack', async () => {
  const u = new URL(s.url);
  const arrived = new Promise((resolve) => s.running.server.once('request', resolve));
  const req = httpRequest({
    host: u.hostname,
    port: u.port,
    path: '/api/auth/login',
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': '200' },
  });
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
  req.on('error', () => {});
  req.write('{"username":"admin",');
  // The server has the request and is reading its body: now the client goes away.
  await arrived;
  req.destroy();
  await closed;
  const line = await poll(
    'the abort log line',
    () => logged.lines.find((l) => l.msg === 'client aborted the request body'),
    10_000,
    20,
  );
  assert.equal(line.level, 30);
  assert.equal(line.err, undefined);
  assert.equal(JSON.stringify(line).includes('stack'), false);
  assert.equal(
    logged.lines.filter((l) => l.level >= 50).length,
    0,
    JSON.stringify(logged.lines.filter((l) => l.level >= 50)),
  );
});

/** Paths of every object inside a zod 4 schema that would silently drop unknown keys. */
function lenientObjects(schema: any, path = '', seen = new Set<unknown>()): string[] {
  if (!schema?._zod || seen.has(schema)) return [];
  seen.add(schema);
  const def = schema._zod.def;
  const inner = (s: unknown, p = path) => lenientObjects(s, p, seen);
  switch (def.type) {
    case 'object': {
      const own = def.catchall?._zod?.def.type === 'never' ? [] : [path || '(body)'];
      return own.concat(...Object.entries(def.shape).map(([k, v]) => inner(v, path ? `${path}.${k}` : k)));
    }
    case 'array':
      return inner(def.element, `${path}[]`);
    case 'pipe':
      return inner(def.in).concat(inner(def.out));
    case 'union':
      return def.options.flatMap((o: unknown) => inner(o));
    case 'intersection':
      return inner(def.left).concat(inner(def.right));
    case 'record':
      return inner(def.valueType, `${path}{}`);
    case 'lazy':
      return inner(def.getter());
    default:
      return def.innerType ? inner(def.innerType) : [];
  }
}

test('every request body schema of the route table is strict, nested objects included', async () => {
  const lenient: string[] = [];
  let bodies = 0;
  for (const route of routes) {
    const mod = await routeModule(route);
    for (const [method, handler] of Object.entries(mod)) {
      const schema = handler?.spec.body;
      if (!schema) continue;
      bodies++;
      for (const p of lenientObjects(schema)) lenient.push(`${method} ${route.pattern}: ${p}`);
    }
  }
  assert.ok(bodies >= 10, `only ${bodies} body schemas found`);
  assert.deepEqual(lenient, []);
});
