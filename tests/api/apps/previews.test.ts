// Preview settings, preview-only variables and the preview resource over the in-process
// dispatcher (no deployment runs: the queue is not started). What previews serve and remove on
// the engine is tests/edge/previews.e2e.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { adminClient, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { SHA_A, SHA_B, githubPullRequest } from '../../unit/webhooks/_payloads.js';

let s: TestApp;
let admin: Client;

before(async () => {
  s = await startTestApp({ SVC_BASE_DOMAIN: 'apps.example.org' });
  admin = await adminClient(s);
});
after(() => s.stop());

const uniq = () => randomBytes(3).toString('hex');

let deliveries = 0;
/** A pull request delivery signed like GitHub's; each call carries a new delivery id. */
async function deliver(appId: string, secret: string, payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  const res = await s.request(`/webhooks/${appId}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': `pv-${++deliveries}-${uniq()}`,
      'x-hub-signature-256': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex'),
    },
    body: new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The deployments of preview `number`'s own app row, oldest first. */
async function previewDeployments(appId: string, number: number) {
  return s.env.db
    .selectFrom('deployments')
    .innerJoin('previews', 'previews.target_app_id', 'deployments.app_id')
    .select(['deployments.id', 'deployments.status'])
    .where('previews.app_id', '=', appId)
    .where('previews.number', '=', number)
    .orderBy('deployments.id')
    .execute();
}

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

test('a pull request delivery sent again under a new delivery id redeploys nothing; a new head commit does; a closed one for no preview is harmless', async () => {
  const app = await gitApp();
  await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, { enabled: true });
  const secret = (await admin.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const opened = githubPullRequest('opened', { number: 7, head: 'feature', sha: SHA_A });
  const first = await deliver(app.id, secret, opened);
  assert.equal(first.status, 202, JSON.stringify(first.body));
  const depId = first.body.preview.deployment_id;
  const other = await deliver(app.id, secret, githubPullRequest('opened', { number: 8, head: 'other' }));
  assert.equal(other.status, 202, JSON.stringify(other.body));

  // The same signed body under a new id while its deployment waits in the queue.
  const replay = await deliver(app.id, secret, opened);
  assert.equal(replay.status, 200, JSON.stringify(replay.body));
  assert.equal(replay.body.duplicate, true);
  assert.equal(
    replay.body.reason,
    `preview 7 is already queued at commit ${SHA_A.slice(0, 12)} of feature (deployment ${depId})`,
  );
  // That deployment ran (the queue is not started here: its row says it succeeded): a reopened
  // delivery at the same head is a repeat too.
  await s.env.db
    .updateTable('deployments')
    .set({ status: 'succeeded', commit_sha: SHA_A, finished_at: new Date().toISOString() })
    .where('id', '=', depId)
    .execute();
  const reopened = await deliver(
    app.id,
    secret,
    githubPullRequest('reopened', { number: 7, head: 'feature', sha: SHA_A }),
  );
  assert.equal(reopened.status, 200, JSON.stringify(reopened.body));
  assert.match(reopened.body.reason, /^preview 7 is already live at commit /);
  assert.deepEqual(
    (await previewDeployments(app.id, 7)).map((d) => d.id),
    [depId],
    'no second deployment',
  );
  const log = (await admin.req('GET', `/api/apps/${app.id}/webhook/deliveries`)).body.items;
  assert.deepEqual(
    log.slice(0, 2).map((i: any) => [i.outcome, i.ref, i.commit]),
    [
      ['duplicate', 'feature', SHA_A],
      ['duplicate', 'feature', SHA_A],
    ],
  );
  const audit = await admin.req('GET', `/api/audit?action=webhook.duplicate&target=${app.id}&limit=10`);
  assert.equal(audit.body.items.length, 2, audit.text);
  assert.equal(audit.body.items[0].detail.pull_request, 7);

  // A new head commit deploys.
  const sync = await deliver(
    app.id,
    secret,
    githubPullRequest('synchronize', { number: 7, head: 'feature', sha: SHA_B }),
  );
  assert.equal(sync.status, 202, JSON.stringify(sync.body));
  assert.notEqual(sync.body.preview.deployment_id, depId);
  assert.equal(sync.body.preview.commit, SHA_B);
  assert.equal((await previewDeployments(app.id, 7)).length, 2);

  // Closed removes; the same closed delivery again finds nothing and touches nothing else.
  const closed = githubPullRequest('closed', { number: 7, head: 'feature', sha: SHA_B });
  assert.equal((await deliver(app.id, secret, closed)).status, 202);
  const again = await deliver(app.id, secret, closed);
  assert.deepEqual([again.status, again.body], [200, { ignored: 'no preview for pull request 7' }]);
  const left = (await admin.req('GET', `/api/apps/${app.id}/previews`)).body.items;
  assert.deepEqual(
    left.map((p: any) => [p.number, p.deployment_id]),
    [[8, other.body.preview.deployment_id]],
  );
});

test('database "empty": the answer (API and delivery) comes before the preview\'s database exists; its deployment makes it', async () => {
  const app = await gitApp();
  // A managed database of the app, as POST .../databases leaves it once provisioned (no engine here).
  await s.env.db
    .insertInto('app_databases')
    .values({
      id: `db${uniq()}${uniq()}`,
      app_id: app.id,
      engine: 'redis',
      version: '7',
      name: '0',
      username: 'default',
      password_sealed: 'x',
      host: 'redis-abcdefgh',
      port: 6379,
      env_var: 'REDIS_URL',
      container: `svc-${app.name}-db-abcdefgh`,
      volume: `svc-${app.name}_db-abcdefgh`,
      status: 'ready',
      error: null,
      created_at: new Date().toISOString(),
    })
    .execute();
  await admin.req('PUT', `/api/apps/${app.id}/previews/settings`, { enabled: true, database: 'empty' });
  const secret = (await admin.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const viaApi = await admin.req('POST', `/api/apps/${app.id}/previews`, { branch: 'feature', number: 3 });
  assert.equal(viaApi.status, 202, viaApi.text);
  const viaHook = await deliver(app.id, secret, githubPullRequest('opened', { number: 4, head: 'other' }));
  assert.equal(viaHook.status, 202, JSON.stringify(viaHook.body));
  for (const n of [3, 4]) {
    const child = await s.env.db
      .selectFrom('previews')
      .select('target_app_id')
      .where('app_id', '=', app.id)
      .where('number', '=', n)
      .executeTakeFirstOrThrow();
    const dbs = await s.env.db
      .selectFrom('app_databases')
      .select('id')
      .where('app_id', '=', child.target_app_id)
      .execute();
    assert.deepEqual(dbs, [], `preview ${n} has no database yet`);
    assert.deepEqual(
      (await previewDeployments(app.id, n)).map((d) => d.status),
      ['queued'],
      'its deployment is accepted',
    );
  }
});
