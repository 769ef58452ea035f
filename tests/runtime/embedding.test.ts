// Embedding: the same handler collection, with services injected by the host, served by two other
// Fetch hosts (a plain `{ fetch }` object and a Hono app): a login and an app listing through each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Hono } from 'hono';
import { createDispatcher } from '../../runtime/dispatcher.js';
import { routes } from '../../runtime/routes.gen.js';
import { insertUser } from '#lib/auth/users-store.js';
import { hashPassword } from '#lib/auth/passwords.js';
import { insertApp } from '#lib/apps/store.js';
import type { Services } from '#lib/http/handler.js';
import { memoryEnv } from '../_support/env.js';

const OPERATOR = { username: 'embedded', password: 'a long enough passphrase' };
let env: Services;
before(async () => {
  // The services a host injects: here an in-memory database and an engine nobody answers on, so
  // the app listing answers the stored status.
  env = await memoryEnv({ SVC_DOCKER_SOCKET: '/nonexistent/docker.sock' });
  await insertUser(env.db, OPERATOR.username, await hashPassword(OPERATOR.password, env.config.passwordCost));
  await insertApp(env.db, 'embedded-app', { type: 'image', image: 'nginx:1.27' });
});
after(async () => {
  await env.db.destroy();
});

type Fetch = (request: Request) => Response | Promise<Response>;

async function loginAndList(fetch: Fetch, base: string): Promise<void> {
  const login = await fetch(
    new Request(base + '/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(OPERATOR),
    }),
  );
  assert.equal(login.status, 200, await login.clone().text());
  assert.equal(((await login.json()) as { user: { username: string } }).user.username, OPERATOR.username);
  const cookies = login.headers.getSetCookie().map((c) => c.split(';')[0]!);
  assert.ok(cookies.some((c) => c.startsWith('svc_session=')));
  const cookie = cookies.join('; ');
  const csrf = cookies.find((c) => c.startsWith('svc_csrf='))!.slice('svc_csrf='.length);

  const apps = await fetch(new Request(base + '/api/apps', { headers: { cookie } }));
  assert.equal(apps.status, 200);
  const body = (await apps.json()) as { items: { name: string; status: string }[] };
  assert.deepEqual(
    body.items.map((a) => a.name),
    ['embedded-app'],
  );

  // The central policy travels with the handlers: no cookie, no listing; a cookie write needs its CSRF token.
  assert.equal((await fetch(new Request(base + '/api/apps'))).status, 401);
  const write = (extra: Record<string, string>) =>
    fetch(
      new Request(base + '/api/apps', {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...extra },
        body: JSON.stringify({ name: 'x', source: { type: 'image', image: 'nginx' } }),
      }),
    );
  assert.equal((await write({})).status, 403);
  assert.equal((await write({ 'x-csrf-token': csrf })).status, 201);
  await env.db.deleteFrom('apps').where('name', '=', 'x').execute();
}

test('a plain `export default { fetch }` object serves the handler collection', async () => {
  const dispatcher = createDispatcher(env, routes);
  const worker = { fetch: (request: Request) => dispatcher.fetch(request) };
  await loginAndList(worker.fetch, 'https://svc.example');
});

test('a Hono app mounts the same handler collection under its own routes', async () => {
  const dispatcher = createDispatcher(env, routes);
  const app = new Hono();
  app.get('/hono-only', (c) => c.text('from hono'));
  // Hono routes /api/* to the dispatcher; the request reaches it unchanged (c.req.raw).
  app.all('/api/*', (c) => dispatcher.fetch(c.req.raw));
  assert.equal(await (await app.fetch(new Request('http://h/hono-only'))).text(), 'from hono');
  await loginAndList((r) => app.fetch(r), 'http://embedded.local');
});
