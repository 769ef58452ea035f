import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Request } from '@whatwg-node/fetch';
import { z } from 'zod';
import { createDispatcher } from '../../runtime/dispatcher.js';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule, type RouteDef } from '../../runtime/route-types.js';
import { route } from '#lib/http/route.js';
import { memoryEnv } from '../_support/env.js';
import type { Services } from '#lib/http/handler.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
let env: Services;
before(async () => {
  env = await memoryEnv();
});
after(async () => {
  await env.db.destroy();
});

test('the committed route table matches the handlers folder', () => {
  execFileSync(process.execPath, ['scripts/gen-routes.mjs', '--check'], {
    cwd: root,
    stdio: 'pipe',
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
});

test('static segments come before parameters, parameters before catch-alls', () => {
  const rank = (p: string) => p.split('/').map((s) => (s.endsWith('+') ? 2 : s.startsWith(':') ? 1 : 0));
  for (let i = 1; i < routes.length; i++) {
    const a = rank(routes[i - 1]!.pattern);
    const b = rank(routes[i]!.pattern);
    const n = Math.min(a.length, b.length);
    for (let k = 0; k < n; k++) {
      if (a[k] !== b[k]) {
        assert.ok(
          a[k]! < b[k]! || routes[i - 1]!.pattern.split('/')[k] !== routes[i]!.pattern.split('/')[k],
          `${routes[i - 1]!.pattern} before ${routes[i]!.pattern}`,
        );
        break;
      }
    }
  }
});

// A table of its own, to show the precedence and parameter rules without depending on real routes.
const seen: string[] = [];
const anything = z.unknown();
const mk = (name: string): RouteDef['module'] => ({
  GET: route({ summary: name, auth: 'public', responses: { 200: anything } }, (_req, ctx) => {
    seen.push(name);
    return ctx.reply(200, { name, params: ctx.params });
  }),
});
const table: RouteDef[] = [
  { pattern: '/api/items/new', file: 'new', module: mk('static') },
  {
    pattern: '/api/items/:id',
    file: 'param',
    module: {
      ...mk('param'),
      DELETE: route({ summary: 'delete', auth: 'public', responses: { 200: anything } }, (_req, ctx) =>
        ctx.reply(200, {}),
      ),
    },
  },
  { pattern: '/api/files/:rest+', file: 'rest', module: mk('catchall') },
];

async function call(method: string, path: string) {
  const app = createDispatcher(env, table);
  const res = await app.fetch(new Request('http://x' + path, { method }));
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

test('static beats parameter; parameters are decoded', async () => {
  assert.equal((await call('GET', '/api/items/new')).body.name, 'static');
  const r = await call('GET', '/api/items/a%20b');
  assert.equal(r.body.name, 'param');
  assert.equal(r.body.params.id, 'a b');
  const c = await call('GET', '/api/files/a/b/c.txt');
  assert.equal(c.body.name, 'catchall');
  assert.equal(c.body.params.rest, 'a/b/c.txt');
});

test('unknown path is 404 in the contract shape; other method is 405 with Allow; HEAD runs GET without a body', async () => {
  const nf = await call('GET', '/api/nope');
  assert.equal(nf.status, 404);
  assert.deepEqual(Object.keys(nf.body).sort(), ['code', 'error']);
  assert.equal(nf.body.code, 'not_found');
  const na = await call('POST', '/api/items/1');
  assert.equal(na.status, 405);
  assert.equal(na.body.code, 'method_not_allowed');
  assert.equal(na.headers.get('allow'), 'GET, HEAD, DELETE');
  const head = await call('HEAD', '/api/items/1');
  assert.equal(head.status, 200);
  assert.equal(head.body, null);
});

test('bad path parameters are 400 and never reach the handler', async () => {
  seen.length = 0;
  for (const p of [
    '/api/items/%00',
    '/api/items/%E0%A4%A',
    '/api/items/..%2Fetc',
    '/api/items/' + 'x'.repeat(300),
    '/api/files/a/..%2Fb',
    '/api/items/a%0Ab',
  ]) {
    const r = await call('GET', p);
    assert.equal(r.status, 400, p);
    assert.equal(r.body.code, 'bad_request', p);
  }
  // The URL parser itself resolves an encoded dot-dot segment away: it never reaches a handler either.
  assert.equal((await call('GET', '/api/items/%2e%2e')).status, 404);
  assert.deepEqual(seen, []);
});

test('every route that is not deliberately public answers 401 without credentials', async () => {
  const app = createDispatcher(env, routes);
  const publicOk = new Set([
    '/api/health',
    '/api/setup/status',
    '/api/setup/admin',
    '/api/auth/login',
    '/api/auth/oidc/start',
    '/api/auth/oidc/callback',
    '/metrics',
    '/api/invitations/:token',
    '/api/invitations/:token/accept',
    // A deploy hook's secret URL is its credential (docs/api.md, "Deploy hooks").
    '/hooks/deploy/:token',
    // The JSON Schema of svc.yaml: editors and CI fetch it without an account (docs/config-file.md).
    '/api/schemas/svc.json',
  ]);
  let checked = 0;
  for (const r of routes) {
    const mod = await routeModule(r);
    const path = r.pattern.replace(/:(\w+)\+/g, 'a/b').replace(/:(\w+)/g, '01m7xsp88xare7pbe7126vxpxd');
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      if (!mod[method]) continue;
      const policy = mod[method].spec.auth ?? 'operator';
      if (policy !== 'operator') {
        assert.ok(
          publicOk.has(r.pattern) || r.pattern.startsWith('/webhooks/') || r.pattern === '/api/auth/totp',
          `${method} ${r.pattern} is public: is it meant to be?`,
        );
        continue;
      }
      const res = await app.fetch(
        new Request('http://x' + path, {
          method,
          body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
          headers: { 'content-type': 'application/json' },
        }),
      );
      assert.equal(res.status, 401, `${method} ${r.pattern}`);
      assert.equal(((await res.json()) as { code: string }).code, 'unauthorized');
      checked++;
    }
  }
  assert.ok(checked >= 10, `checked ${checked} routes`);
});

test('a loaded route answers synchronously when nothing on its path waits (health, a known bearer)', async () => {
  const app = createDispatcher(env, routes);
  const { insertUser } = await import('#lib/auth/users-store.js');
  const { createApiToken } = await import('#lib/auth/tokens.js');
  const user = await insertUser(env.db, 'sync-check', 'not-a-real-hash');
  const { token } = await createApiToken(env.db, user.id, 'sync', null);
  const health = () =>
    app.fetch(new Request('http://x/api/health'), { target: '/api/health', rawHeaders: {} });
  const me = () =>
    app.fetch(new Request('http://x/api/auth/me'), {
      target: '/api/auth/me',
      rawHeaders: { authorization: `Bearer ${token}` },
    });
  // The first call loads the handler module; after that no promise is made on these paths.
  assert.equal((await health()).status, 200);
  assert.equal((await me()).status, 200);
  const h = health();
  assert.ok(!(h instanceof Promise), 'health answered with a promise');
  assert.equal((h as Response).status, 200);
  assert.deepEqual(await (h as Response).json(), { status: 'ok', db: 'ok' });
  const m = me();
  assert.ok(!(m instanceof Promise), 'an authenticated GET answered with a promise');
  assert.equal(
    ((await (m as Response).json()) as { user: { username: string } }).user.username,
    'sync-check',
  );
  // A revoked token is refused at once, still without waiting.
  const { revokeApiToken } = await import('#lib/auth/tokens-store.js');
  const id = (
    (await env.db
      .selectFrom('api_tokens')
      .select('id')
      .where('name', '=', 'sync')
      .executeTakeFirstOrThrow()) as { id: string }
  ).id;
  assert.equal(await revokeApiToken(env.db, user.id, id), true);
  const gone = me();
  assert.ok(!(gone instanceof Promise));
  assert.equal((gone as Response).status, 401);
});
