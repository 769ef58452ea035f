// The apps list a page at a time (GET /api/apps ?cursor=&limit=&q=), in-process with the typed
// client: pages in name order that join up without a gap or a repeat, a search that takes its
// wildcards literally, an operator limited to apps seeing only those (and counting only those),
// each app's URLs and newest deployment (with who asked for it), the proxy's state in words, the
// same URLs and state on one app, and the audit naming its targets. The proxy is off here (no Caddy).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { people } from '../../_support/people.js';
import type { SvcClient } from '../../../client/index.js';

let s: TestApp;
let admin: Client;
let api: SvcClient;
const NAMES = ['list-alpha', 'list-beta', 'list-beta-two', 'list-delta', 'list-echo', 'list-gamma', 'other'];
const ids = new Map<string, string>();

before(async () => {
  s = await startTestApp();
  admin = await adminClient(s);
  api = await typedClient(s);
  // Created out of order: the list is by name, not by creation.
  for (const name of [...NAMES].reverse()) {
    const r = await api.POST('/api/apps', { body: { name, source: { type: 'image', image: 'nginx:1.27' } } });
    assert.equal(r.response.status, 201);
    ids.set(name, r.data!.app.id);
  }
});
after(() => s?.stop());

test('pages in name order join up: every app once, next_cursor until the last page, the total on each', async () => {
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const r = await api.GET('/api/apps', { params: { query: { limit: 3, ...(cursor ? { cursor } : {}) } } });
    assert.equal(r.response.status, 200);
    assert.ok(r.data!.items.length <= 3);
    assert.equal(r.data!.total, NAMES.length);
    seen.push(...r.data!.items.map((a) => a.name));
    cursor = r.data!.next_cursor;
    pages++;
  } while (cursor);
  assert.deepEqual(seen, [...NAMES].sort());
  assert.equal(pages, 3);
  // Without a limit: the default page holds them all, with no cursor.
  const all = await api.GET('/api/apps');
  assert.equal(all.data!.items.length, NAMES.length);
  assert.equal(all.data!.next_cursor, undefined);
});

test('the search matches a part of the name in any case, counts what it matches, and takes % and _ literally', async () => {
  const beta = await api.GET('/api/apps', { params: { query: { q: 'BETA' } } });
  assert.deepEqual(
    beta.data!.items.map((a) => a.name),
    ['list-beta', 'list-beta-two'],
  );
  assert.equal(beta.data!.total, 2);
  const paged = await api.GET('/api/apps', { params: { query: { q: 'list', limit: 2 } } });
  assert.equal(paged.data!.total, 6);
  assert.ok(paged.data!.next_cursor);
  for (const q of ['%', '_', 'list_alpha'])
    assert.equal((await api.GET('/api/apps', { params: { query: { q } } })).data!.total, 0, q);
});

test('bad paging input is a 400 naming the field', async () => {
  for (const query of ['limit=0', 'limit=501', 'limit=x', 'cursor=Not%20A%20Name']) {
    const r = await admin.req('GET', `/api/apps?${query}`);
    assert.equal(r.status, 400, query);
    assert.equal(r.body.code, 'bad_request');
    assert.ok(
      r.body.details.some((d: { field: string }) => query.startsWith(d.field)),
      r.text,
    );
  }
});

test('an operator limited to apps sees and counts only those, in every page', async () => {
  const p = people(s);
  const d = await p.operator('list-deployer', 'deployer', [ids.get('list-delta')!, ids.get('other')!]);
  const theirs = await typedClient(s, d.token);
  const first = await theirs.GET('/api/apps', { params: { query: { limit: 1 } } });
  assert.deepEqual(
    first.data!.items.map((a) => a.name),
    ['list-delta'],
  );
  assert.equal(first.data!.total, 2);
  const second = await theirs.GET('/api/apps', {
    params: { query: { limit: 1, cursor: first.data!.next_cursor! } },
  });
  assert.deepEqual(
    second.data!.items.map((a) => a.name),
    ['other'],
  );
  assert.equal(second.data!.next_cursor, undefined);
  assert.equal((await theirs.GET('/api/apps', { params: { query: { q: 'alpha' } } })).data!.total, 0);
});

test("each app's URLs and newest deployment (who asked, which trigger); the proxy's state says what to do", async () => {
  const id = ids.get('list-echo')!;
  const added = await admin.req('POST', `/api/apps/${id}/domains`, {
    hostname: 'echo.example.test',
    service: 'web',
    port: 8080,
  });
  assert.equal(added.status, 201, added.text);
  const queued = await api.POST('/api/apps/{id}/deployments', { params: { path: { id } }, body: {} });
  assert.equal(queued.response.status, 202);
  // An API token acts for its operator: the deployment names them.
  assert.equal(queued.data!.deployment.created_by, ADMIN.username);

  const r = await api.GET('/api/apps', { params: { query: { q: 'echo' } } });
  const echo = r.data!.items[0]!;
  assert.deepEqual(echo.urls, [
    {
      url: 'http://echo.example.test',
      hostname: 'echo.example.test',
      service: 'web',
      automatic: false,
      https: false,
      status: 'awaiting_dns',
    },
  ]);
  assert.equal(echo.last_deployment?.id, queued.data!.deployment.id);
  assert.equal(echo.last_deployment?.created_by, ADMIN.username);
  assert.equal(echo.last_deployment?.trigger, 'manual');
  const alpha = (await api.GET('/api/apps', { params: { query: { q: 'alpha' } } })).data!.items[0]!;
  assert.deepEqual(alpha.urls, []);
  assert.equal(alpha.last_deployment, null);
  assert.equal(r.data!.proxy.state, 'off');
  assert.match(r.data!.proxy.detail, /SVC_PROXY=off/);

  // One app answers the same URLs and proxy state.
  const one = await api.GET('/api/apps/{id}', { params: { path: { id } } });
  assert.deepEqual(one.data!.urls, echo.urls);
  assert.deepEqual(one.data!.proxy, r.data!.proxy);
  assert.equal(one.data!.app.name, 'list-echo');
  const listed = await api.GET('/api/apps/{id}/deployments', { params: { path: { id } } });
  assert.equal(listed.data!.items[0]!.created_by, ADMIN.username);
});

test("the audit names each entry's target by its current name", async () => {
  const id = ids.get('list-gamma')!;
  const r = await api.GET('/api/audit', { params: { query: { target: id } } });
  assert.equal(r.response.status, 200);
  const created = r.data!.items.find((e) => e.action === 'POST /api/apps');
  assert.ok(created, 'the creation is audited');
  assert.deepEqual(created.target, { type: 'app', id });
  assert.equal(created.target_name, 'list-gamma');
});
