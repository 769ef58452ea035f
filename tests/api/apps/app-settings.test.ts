// An app's domains, one backup configuration, and the build plan of a repository, in-process. The
// proxy is off (no Caddy): a domain is stored and listed, and the answer says nothing was synced;
// domains served over HTTPS are in tests/edge/api.e2e.test.ts. The build plan clones from a git
// server on loopback (tests/_support/gitserver.ts), a process, not the engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { startGitServer, type GitServer } from '../../_support/gitserver.js';

let s: TestApp;
let c: Client;
let git: GitServer;
let n = 0;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
  git = await startGitServer();
});
after(async () => {
  await s?.stop();
  await git?.stop();
});

async function imageApp(): Promise<{ id: string; name: string }> {
  const r = await c.req('POST', '/api/apps', {
    name: `set-${++n}`,
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

async function gitApp(repo: string): Promise<{ id: string; name: string }> {
  const r = await c.req('POST', '/api/apps', {
    name: `plan-${++n}`,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

test("an app's domains: added, listed with the app, moved to another app; bad input is a 400 that stores nothing", async () => {
  const shop = await imageApp();
  const blog = await imageApp();
  const service = (await c.req('GET', `/api/apps/${shop.id}`)).body.app.services?.[0]?.name ?? 'web';
  const empty = await c.req('GET', `/api/apps/${shop.id}/domains`);
  assert.equal(empty.status, 200, empty.text);
  assert.deepEqual(empty.body.items, []);
  assert.equal(typeof empty.body.proxy, 'object');

  const added = await c.req('POST', `/api/apps/${shop.id}/domains`, {
    hostname: 'Shop.Example.test',
    service,
    port: 8080,
  });
  assert.equal(added.status, 201, added.text);
  assert.equal(added.body.domain.hostname, 'shop.example.test');
  assert.equal(added.body.domain.app_id, shop.id);
  assert.equal(added.body.domain.service, service);
  assert.equal(added.body.domain.port, 8080);
  const id = added.body.domain.id;
  const listed = (await c.req('GET', `/api/apps/${shop.id}/domains`)).body.items;
  assert.deepEqual(
    listed.map((d: any) => [d.id, d.hostname]),
    [[id, 'shop.example.test']],
  );

  for (const body of [
    { hostname: 'bad_name.example', service, port: 80 },
    { hostname: 'x.example.test' },
    { hostname: 'y.example.test', service, extra: 1 },
  ]) {
    const r = await c.req('POST', `/api/apps/${shop.id}/domains`, body);
    assert.equal(r.status, 400, JSON.stringify(body) + r.text);
    assert.equal(r.body.code, 'bad_request');
  }
  const dup = await c.req('POST', `/api/apps/${blog.id}/domains`, {
    hostname: 'SHOP.example.test.',
    service,
    port: 80,
  });
  assert.equal(dup.status, 409, dup.text);
  assert.equal(
    (await c.req('GET', `/api/apps/${shop.id}/domains`)).body.items.length,
    1,
    'nothing half-stored',
  );
  assert.equal((await c.req('GET', `/api/apps/${blog.id}/domains`)).body.items.length, 0);
  assert.equal(
    (
      await c.req('POST', '/api/apps/01m7xsp88xare7pbe7126vxpxd/domains', {
        hostname: 'z.example.test',
        service,
      })
    ).status,
    404,
  );

  const moved = await c.req('PATCH', `/api/domains/${id}`, { app_id: blog.id, service, port: 80 });
  assert.equal(moved.status, 200, moved.text);
  assert.equal(moved.body.domain.app_id, blog.id);
  assert.equal(moved.body.domain.port, 80);
  assert.equal((await c.req('GET', `/api/apps/${shop.id}/domains`)).body.items.length, 0);
  assert.equal((await c.req('GET', `/api/apps/${blog.id}/domains`)).body.items[0].id, id);
  const badPatch = await c.req('PATCH', `/api/domains/${id}`, { hostname: 'bad_name.example' });
  assert.equal(badPatch.status, 400, badPatch.text);
  assert.equal((await c.req('PATCH', `/api/domains/${id}`, { colour: 'red' })).status, 400);
  assert.equal((await c.req('PATCH', '/api/domains/01m7xsp88xare7pbe7126vxpxd', { port: 81 })).status, 404);
  assert.equal(
    (await c.req('GET', `/api/domains/${id}`)).body.domain.hostname,
    'shop.example.test',
    'unchanged by the refusals',
  );
  const events = (await c.req('GET', '/api/audit?limit=50')).body.items.map((e: any) => e.event);
  assert.ok(events.includes('domain.created') && events.includes('domain.updated'), events.join(' '));
});

test('one backup configuration: read, a harmless change saved, lowering keep_last needs a step-up, bad input 400', async () => {
  const app = await imageApp();
  const made = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'volume', volume: 'data' },
    schedule: '0 3 * * *',
    keep_last: 5,
  });
  assert.equal(made.status, 201, made.text);
  const bid = made.body.backup.id;
  const one = await c.req('GET', `/api/apps/${app.id}/backups/${bid}`);
  assert.equal(one.status, 200, one.text);
  assert.equal(one.body.backup.id, bid);
  assert.deepEqual(one.body.backup.source, { type: 'volume', volume: 'data' });
  assert.equal(one.body.backup.keep_last, 5);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/backups/01m7xsp88xare7pbe7126vxpxd`)).status, 404);

  const more = await c.req('PATCH', `/api/apps/${app.id}/backups/${bid}`, {
    schedule: '15 2 * * *',
    keep_last: 8,
  });
  assert.equal(more.status, 200, more.text);
  assert.deepEqual([more.body.backup.schedule, more.body.backup.keep_last], ['15 2 * * *', 8]);
  const fewer = await c.req('PATCH', `/api/apps/${app.id}/backups/${bid}`, { keep_last: 2 });
  assert.equal(fewer.status, 403, fewer.text);
  assert.equal(fewer.body.code, 'step_up_required');
  const bad = await c.req('PATCH', `/api/apps/${app.id}/backups/${bid}`, { schedule: 'every day' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.body.code, 'bad_request');
  assert.equal((await c.req('PATCH', `/api/apps/${app.id}/backups/${bid}`, { colour: 'red' })).status, 400);
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const stepped = await c.req('PATCH', `/api/apps/${app.id}/backups/${bid}`, { keep_last: 2 });
  assert.equal(stepped.status, 200, stepped.text);
  const now = (await c.req('GET', `/api/apps/${app.id}/backups/${bid}`)).body.backup;
  assert.deepEqual([now.schedule, now.keep_last], ['15 2 * * *', 2]);
});

test('the build plan of a repository without a Dockerfile: stack, commands, the generated Dockerfile; bad refs refused', async () => {
  await git.commit('site', { 'index.html': 'hello\n' });
  const app = await gitApp('site');
  const plan = await c.req('GET', `/api/apps/${app.id}/build-plan`);
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.stack, 'static');
  assert.deepEqual(plan.body.detected_from, ['index.html']);
  // Caddy assembles the site; the final image is distroless with Caddy's binary alone.
  assert.deepEqual(plan.body.images, ['caddy:2-alpine', 'gcr.io/distroless/static-debian12']);
  assert.equal(plan.body.port, 8080);
  assert.match(plan.body.dockerfile, /^FROM caddy:2-alpine AS site$/m);
  assert.match(plan.body.dockerfile, /^FROM gcr.io\/distroless\/static-debian12$/m);
  assert.ok(Array.isArray(plan.body.warnings));
  assert.equal((await c.req('GET', `/api/apps/${app.id}/build-plan?ref=main`)).status, 200);
  const bad = await c.req('GET', `/api/apps/${app.id}/build-plan?ref=nope`);
  assert.equal(bad.status, 400, bad.text);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/build-plan?ref=${'x'.repeat(300)}`)).status, 400);

  // A repository that builds its own Dockerfile has no plan to show (409); nothing recognisable is 422.
  await git.commit('own', { Dockerfile: 'FROM scratch\n' });
  const own = await c.req('GET', `/api/apps/${(await gitApp('own')).id}/build-plan`);
  assert.equal(own.status, 409, own.text);
  await git.commit('bare', { 'notes.txt': 'nothing to build\n' });
  const bare = await c.req('GET', `/api/apps/${(await gitApp('bare')).id}/build-plan`);
  assert.equal(bare.status, 422, bare.text);
  assert.equal(bare.body.code, 'not_detectable');
  assert.equal((await c.req('GET', '/api/apps/01m7xsp88xare7pbe7126vxpxd/build-plan')).status, 404);
});
