// Preview settings, preview-only variables and the preview resource over the in-process
// dispatcher (no deployment runs: the queue is not started). What previews serve and remove on
// the engine is tests/edge/previews.e2e.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminClient, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';

let s: TestApp;
let admin: Client;

before(async () => {
  s = await startTestApp({ SVC_BASE_DOMAIN: 'apps.example.org' });
  admin = await adminClient(s);
});
after(() => s.stop());

const uniq = () => randomBytes(3).toString('hex');

async function gitApp(): Promise<{ id: string; name: string }> {
  const r = await admin.req('POST', '/api/apps', {
    name: `pv-${uniq()}`,
    source: { type: 'git', repo_url: 'https://forge.example/team/app.git', branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

test('settings: safe defaults, validated, stored; preview env sealed like env (secret values null)', async () => {
  const app = await gitApp();
  const g = await admin.req('GET', `/api/apps/${app.id}/previews/settings`);
  assert.deepEqual(g.body, {
    enabled: false,
    from_forks: false,
    ttl_hours: 72,
    max: 5,
    inherit_env: [],
    database: 'none',
    sleep_after_minutes: 30,
  });
  const bads = [
    { enabled: 'yes' },
    { enabled: true, max: 0 },
    { enabled: true, database: 'copy' },
    { enabled: true, inherit_env: ['1X'] },
    { enabled: true, extra: 1 },
    { enabled: true, sleep_after_minutes: 0 },
    { enabled: true, sleep_after_minutes: 10_081 },
    { enabled: true, sleep_after_minutes: 2.5 },
  ];
  for (const bad of bads) {
    const r = await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
    assert.equal(r.body.code, 'bad_request');
  }
  const p = await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    max: 2,
    ttl_hours: 4,
    inherit_env: ['B', 'A', 'A'],
    database: 'empty',
  });
  assert.deepEqual(p.body, {
    enabled: true,
    from_forks: false,
    ttl_hours: 4,
    max: 2,
    inherit_env: ['A', 'B'],
    database: 'empty',
    sleep_after_minutes: 30,
  });
  const e = await admin.req('PUT', `/api/apps/${app.id}/previews/env`, {
    items: [
      { key: 'TOKEN', value: 'hidden' },
      { key: 'MODE', value: 'preview', secret: false },
    ],
  });
  assert.equal(e.status, 200, e.text);
  assert.deepEqual(e.body.items, [
    { key: 'MODE', secret: false, value: 'preview' },
    { key: 'TOKEN', secret: true, value: null },
  ]);
  const row = await s.env.db
    .selectFrom('preview_env')
    .select('sealed')
    .where('app_id', '=', app.id)
    .where('key', '=', 'TOKEN')
    .executeTakeFirstOrThrow();
  assert.ok(!row.sealed.includes('hidden'));
  // value null keeps the stored value; a new key needs one.
  assert.equal(
    (await admin.req('PUT', `/api/apps/${app.id}/previews/env`, { items: [{ key: 'TOKEN', value: null }] }))
      .status,
    200,
  );
  assert.equal(
    (await admin.req('PUT', `/api/apps/${app.id}/previews/env`, { items: [{ key: 'NEW', value: null }] }))
      .status,
    400,
  );
  assert.equal(
    (await admin.req('GET', `/api/apps/${app.id}/previews/env`)).body.items.length,
    1,
    'the PUT replaced the set',
  );
  // Nothing of it lands in the app's own env.
  assert.deepEqual((await admin.req('GET', `/api/apps/${app.id}/env`)).body.items, []);
});

test('create: off -> 409; bad branch 400; numbers from 1000; max removes the oldest; DELETE; hidden from app routes', async () => {
  const app = await gitApp();
  const off = await admin.req('POST', `/api/apps/${app.id}/previews`, { branch: 'feature' });
  assert.equal(off.status, 409, off.text);
  await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, { enabled: true, max: 2 });
  for (const branch of ['-x', 'a..b', '$(id)'])
    assert.equal((await admin.req('POST', `/api/apps/${app.id}/previews`, { branch })).status, 400, branch);
  const a = await admin.req('POST', `/api/apps/${app.id}/previews`, { branch: 'feature' });
  assert.equal(a.status, 202, a.text);
  const p = a.body.preview;
  assert.equal(p.number, 1000);
  assert.equal(p.host, `pr-1000-${app.name}.apps.example.org`);
  assert.equal(p.url, `https://pr-1000-${app.name}.apps.example.org`);
  assert.equal(p.branch, 'feature');
  assert.ok(p.deployment_id);
  assert.equal(p.sleeping, false);
  assert.ok(Date.parse(p.expires_at) - Date.parse(p.created_at) >= 72 * 3600_000 - 1000);
  const b = await admin.req('POST', `/api/apps/${app.id}/previews`, { branch: 'other', number: 42 });
  assert.equal(b.status, 202, b.text);
  assert.equal(
    (await admin.req('POST', `/api/apps/${app.id}/previews`, { branch: 'third' })).body.preview.number,
    1000,
    '1000 is free again after max removed it',
  );
  const list = await admin.req('GET', `/api/apps/${app.id}/previews`);
  assert.deepEqual(
    list.body.items.map((i: any) => [i.number, i.branch]),
    [
      [42, 'other'],
      [1000, 'third'],
    ],
  );
  // The preview's own app row is reachable through its app only.
  const child = await s.env.db
    .selectFrom('previews')
    .select('target_app_id')
    .where('number', '=', 42)
    .executeTakeFirstOrThrow();
  assert.equal((await admin.req('GET', `/api/apps/${child.target_app_id}`)).status, 404);
  assert.ok(!(await admin.req('GET', '/api/apps')).body.items.some((x: any) => x.id === child.target_app_id));
  const one = list.body.items[0];
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/previews/${one.id}`)).body.preview.number, 42);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/previews/${one.id}/logs`)).status, 200);
  assert.equal((await admin.req('DELETE', `/api/apps/${app.id}/previews/${one.id}`)).status, 200);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/previews/${one.id}`)).status, 404);
  assert.equal(
    await s.env.db.selectFrom('apps').select('id').where('id', '=', child.target_app_id).executeTakeFirst(),
    undefined,
  );
});

test('an image app has no branches to preview; app names that would take a preview host are refused', async () => {
  const img = await admin.req('POST', '/api/apps', {
    name: `img-${uniq()}`,
    source: { type: 'image', image: 'busybox:1' },
  });
  await admin.req('PUT', `/api/apps/${img.body.app.id}/previews/settings`, { enabled: true });
  assert.equal(
    (await admin.req('POST', `/api/apps/${img.body.app.id}/previews`, { branch: 'x' })).status,
    400,
  );
  const taken = await admin.req('POST', '/api/apps', {
    name: 'pr-12-shop',
    source: { type: 'image', image: 'busybox:1' },
  });
  assert.equal(taken.status, 400, taken.text);
});

test("previews sleep by default: the setting lands on each preview's own app row and follows a change", async () => {
  const app = await gitApp();
  await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, { enabled: true });
  const made = await admin.req('POST', `/api/apps/${app.id}/previews`, { branch: 'feature' });
  assert.equal(made.status, 202, made.text);
  const child = async () =>
    (
      await s.env.db
        .selectFrom('previews')
        .innerJoin('apps', 'apps.id', 'previews.target_app_id')
        .select('apps.sleep_after_minutes')
        .where('previews.id', '=', made.body.preview.id)
        .executeTakeFirstOrThrow()
    ).sleep_after_minutes;
  assert.equal(await child(), 30);
  const never = await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    sleep_after_minutes: null,
  });
  assert.equal(never.body.sleep_after_minutes, null);
  assert.equal(await child(), null, 'an existing preview follows the settings');
  await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, { enabled: true, sleep_after_minutes: 5 });
  assert.equal(await child(), 5);
  // The app itself is untouched.
  assert.equal((await admin.req('GET', `/api/apps/${app.id}`)).body.app.sleep_after_minutes, null);
});
