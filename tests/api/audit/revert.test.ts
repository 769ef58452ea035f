// Audit diff and revert over HTTP against the real control plane (docs/api.md "Audit diff and
// revert"): the audit stage records each diffable target before and after; a revert goes back
// through the route's own lib functions; secrets never reach the audit table in clear.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminClient, ADMIN, Client, reveal } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { routes } from '../../../runtime/routes.gen.js';
import { routeModule } from '../../../runtime/route-types.js';
import { METHODS } from '#lib/http/handler.js';
import { issue, makeCa } from '../../_support/pki.js';

let s: TestApp;
let c: Client;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
});
after(() => s.stop());

const uniq = () => 'aud-' + randomBytes(3).toString('hex');
const SECRET_A = 'sk_live_Before' + randomBytes(6).toString('hex');
const SECRET_B = 'sk_live_After' + randomBytes(6).toString('hex');

async function newApp(): Promise<string> {
  const r = await c.req('POST', '/api/apps', {
    name: uniq(),
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app?.id ?? r.body.id;
}

/** The newest entry of an action (optionally on a target). */
async function lastEntry(action: string, target?: string) {
  const q = new URLSearchParams({ action, limit: '1' });
  if (target) q.set('target', target);
  const r = await c.req('GET', `/api/audit?${q}`);
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body.items[0], `no ${action} entry`);
  return r.body.items[0];
}

async function envOf(appId: string) {
  const r = await c.req('GET', `/api/apps/${appId}/env`);
  return Object.fromEntries(r.body.items.map((i: any) => [i.key, i]));
}

const putEnv = async (appId: string, items: unknown[]) => {
  const r = await c.req('PUT', `/api/apps/${appId}/env`, { items });
  assert.equal(r.status, 200, r.text);
};

test('an env change (plain and secret) is diffed with the secret masked, reverted to the real secret value, and refused a second time', async () => {
  const app = await newApp();
  await putEnv(app, [
    { key: 'PLAIN', value: 'one', secret: false },
    { key: 'TOKEN', value: SECRET_A, secret: true },
    { key: 'GONE', value: 'bye', secret: false },
  ]);
  await putEnv(app, [
    { key: 'PLAIN', value: 'two', secret: false },
    { key: 'TOKEN', value: SECRET_B, secret: true },
    { key: 'NEW', value: 'hello', secret: false },
  ]);
  const entry = await lastEntry('app.env_replaced', app);
  assert.equal(entry.revertible, true);
  assert.equal(entry.state_kind, 'app_env');

  const diff = await c.req('GET', `/api/audit/${entry.id}/diff`);
  assert.equal(diff.status, 200, diff.text);
  assert.equal(diff.body.changed_since, false);
  const rows = Object.fromEntries(diff.body.rows.map((r: any) => [r.field, r]));
  assert.deepEqual(rows.PLAIN, {
    field: 'PLAIN',
    status: 'changed',
    before: 'one',
    after: 'two',
    masked: false,
  });
  assert.deepEqual(
    rows.TOKEN,
    { field: 'TOKEN', status: 'changed', masked: true },
    'a secret shows only that it changed',
  );
  assert.deepEqual(rows.NEW, { field: 'NEW', status: 'added', after: 'hello', masked: false });
  assert.deepEqual(rows.GONE, { field: 'GONE', status: 'removed', before: 'bye', masked: false });
  assert.ok(!diff.text.includes(SECRET_A) && !diff.text.includes(SECRET_B));

  const rev = await c.req('POST', `/api/audit/${entry.id}/revert`);
  assert.equal(rev.status, 200, rev.text);
  assert.match(rev.body.audit_id, /^\d+$/);
  const env = await envOf(app);
  assert.deepEqual(Object.keys(env).sort(), ['GONE', 'PLAIN', 'TOKEN']);
  assert.equal(env.PLAIN.value, 'one');
  assert.equal(env.TOKEN.secret, true);
  const shown = await reveal(c, app, 'TOKEN');
  assert.equal(shown.body.value, SECRET_A, 'the real secret value came back');

  // The revert is an entry of its own, linked both ways, and diffable like any change.
  const list = (await c.req('GET', `/api/audit?target=${app}&limit=10`)).body.items;
  const revertEntry = list.find((i: any) => i.id === rev.body.audit_id);
  assert.equal(revertEntry.action, 'POST /api/audit/{id}/revert');
  assert.equal(revertEntry.event, 'audit.reverted');
  assert.deepEqual(revertEntry.target, { type: 'app', id: app });
  assert.equal(
    revertEntry.summary,
    `Reverted audit entry ${entry.id}: ${(await c.req('GET', `/api/apps/${app}`)).body.app.name}`,
  );
  assert.equal(revertEntry.revert_of, entry.id);
  assert.equal(revertEntry.state_kind, 'app_env');
  const original = list.find((i: any) => i.id === entry.id);
  assert.ok(original.reverted_at);
  assert.equal(original.reverted_by, rev.body.audit_id);
  assert.equal(original.revertible, false);
  const revDiff = await c.req('GET', `/api/audit/${rev.body.audit_id}/diff`);
  assert.equal(revDiff.body.rows.find((r: any) => r.field === 'PLAIN').before, 'two');

  const again = await c.req('POST', `/api/audit/${entry.id}/revert`, { force: true });
  assert.equal(again.status, 409, again.text);
  assert.equal(again.body.code, 'conflict');
  assert.equal((await envOf(app)).PLAIN.value, 'one');
});

test('a revert after a later change is refused (409) unless forced; the diff says the target changed since', async () => {
  const app = await newApp();
  await putEnv(app, [{ key: 'V', value: '1', secret: false }]);
  await putEnv(app, [{ key: 'V', value: '2', secret: false }]);
  const entry = await lastEntry('app.env_replaced', app);
  await putEnv(app, [{ key: 'V', value: '3', secret: false }]);

  assert.equal((await c.req('GET', `/api/audit/${entry.id}/diff`)).body.changed_since, true);
  const refused = await c.req('POST', `/api/audit/${entry.id}/revert`, {});
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.body.code, 'conflict');
  assert.match(refused.body.error, /force/);
  assert.equal((await envOf(app)).V.value, '3', 'nothing applied');
  assert.equal(
    (await c.req('GET', `/api/audit?target=${app}&action=app.env_replaced&limit=5`)).body.items.find(
      (i: any) => i.id === entry.id,
    ).reverted_at,
    null,
  );

  const forced = await c.req('POST', `/api/audit/${entry.id}/revert`, { force: true });
  assert.equal(forced.status, 200, forced.text);
  assert.equal((await envOf(app)).V.value, '1');
});

test('entries without state (a login, a failed request) answer 422 not_diffable for diff and revert', async () => {
  const login = await lastEntry('auth.login');
  for (const [method, path] of [
    ['GET', `/api/audit/${login.id}/diff`],
    ['POST', `/api/audit/${login.id}/revert`],
  ] as const) {
    const r = await c.req(method, path);
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.code, 'not_diffable');
  }
  assert.equal(login.revertible, false);
  // A change that failed recorded nothing to restore.
  const app = await newApp();
  const bad = await c.req('PUT', `/api/apps/${app}/env`, {
    items: [
      { key: 'K', value: 'x' },
      { key: 'K', value: 'y' },
    ],
  });
  assert.equal(bad.status, 400);
  const failed = await lastEntry('PUT /api/apps/{id}/env', app);
  assert.equal(failed.outcome, 'error');
  assert.equal(failed.status, 400);
  assert.equal((await c.req('GET', `/api/audit/${failed.id}/diff`)).status, 422);
  assert.equal((await c.req('GET', '/api/audit/999999999/diff')).status, 404);
  assert.equal((await c.req('GET', '/api/audit/abc/diff')).status, 400);
});

test('app source, triggers and deploy concurrency revert through their own functions (validation included)', async () => {
  const app = await newApp();
  const patched = await c.req('PATCH', `/api/apps/${app}`, {
    source: { type: 'image', image: 'nginx:1.28' },
  });
  assert.equal(patched.status, 200, patched.text);
  const appEntry = await lastEntry('app.updated', app);
  const d = await c.req('GET', `/api/audit/${appEntry.id}/diff`);
  assert.deepEqual(
    d.body.rows.find((r: any) => r.field === 'source.image'),
    { field: 'source.image', status: 'changed', before: 'nginx:1.27', after: 'nginx:1.28', masked: false },
  );
  assert.equal((await c.req('POST', `/api/audit/${appEntry.id}/revert`)).status, 200);
  assert.equal((await c.req('GET', `/api/apps/${app}`)).body.app.source.image, 'nginx:1.27');

  const added = await c.req('POST', `/api/apps/${app}/triggers`, { event: 'tag', pattern: 'v*' });
  assert.equal(added.status, 201, added.text);
  const trig = await lastEntry('app.trigger_added', app);
  const td = await c.req('GET', `/api/audit/${trig.id}/diff`);
  assert.deepEqual(td.body.rows, [
    {
      field: added.body.id,
      status: 'added',
      after: { event: 'tag', pattern: 'v*', enabled: true },
      masked: false,
    },
  ]);
  assert.equal((await c.req('POST', `/api/audit/${trig.id}/revert`)).status, 200);
  assert.deepEqual((await c.req('GET', `/api/apps/${app}/triggers`)).body.items, []);

  const before = (await c.req('GET', '/api/instance/deploy-concurrency')).body.concurrency;
  assert.equal(
    (await c.req('PUT', '/api/instance/deploy-concurrency', { concurrency: before === 3 ? 4 : 3 })).status,
    200,
  );
  const conc = await lastEntry('instance.deploy_concurrency');
  assert.equal((await c.req('POST', `/api/audit/${conc.id}/revert`)).status, 200);
  assert.equal((await c.req('GET', '/api/instance/deploy-concurrency')).body.concurrency, before);
  assert.equal(s.env.deployments.getConcurrency(), before, 'the running queue took the restored value');
});

test('a revert of a domain deletion re-creates it through the domain functions (hostname rules apply)', async () => {
  const host = `${uniq()}.audit.test`;
  const created = await c.req('POST', '/api/domains', { hostname: host, redirect_to: 'example.org' });
  assert.equal(created.status, 201, created.text);
  const creation = await lastEntry('domain.created', created.body.domain.id);
  assert.equal(creation.state_kind, 'domain');
  assert.deepEqual(creation.target, { type: 'domain', id: created.body.domain.id });
  assert.equal(creation.action, 'POST /api/domains');
  const del = await c.req('DELETE', `/api/domains/${created.body.domain.id}`);
  assert.equal(del.status, 200, del.text);
  const deletion = await lastEntry('domain.deleted', created.body.domain.id);
  const dd = await c.req('GET', `/api/audit/${deletion.id}/diff`);
  assert.deepEqual(
    dd.body.rows.find((r: any) => r.field === 'hostname'),
    { field: 'hostname', status: 'removed', before: host, masked: false },
  );

  // Reverting the creation now: the target is gone since, so only a forced revert proceeds.
  assert.equal((await c.req('POST', `/api/audit/${creation.id}/revert`)).status, 409);

  // Someone takes the hostname meanwhile: the revert is refused by the domain rules, nothing changes.
  const squatter = await c.req('POST', '/api/domains', { hostname: host, redirect_to: 'example.net' });
  assert.equal(squatter.status, 201);
  const clash = await c.req('POST', `/api/audit/${deletion.id}/revert`, { force: true });
  assert.ok(clash.status === 409 || clash.status === 400, clash.text);
  assert.equal(
    (await c.req('GET', '/api/audit?action=domain.deleted&limit=50')).body.items.find(
      (i: any) => i.id === deletion.id,
    ).reverted_at,
    null,
    'a failed revert stays revertible',
  );
  assert.equal((await c.req('DELETE', `/api/domains/${squatter.body.domain.id}`)).status, 200);

  const rev = await c.req('POST', `/api/audit/${deletion.id}/revert`, { force: true });
  assert.equal(rev.status, 200, rev.text);
  const back = (await c.req('GET', '/api/domains')).body.items.find((d: any) => d.hostname === host);
  assert.ok(back, 'the domain is back');
  assert.equal(back.redirect_to, 'example.org');
  const revEntry = (await c.req('GET', `/api/audit?action=audit.reverted&limit=1`)).body.items[0];
  assert.deepEqual(
    revEntry.target,
    { type: 'domain', id: back.id },
    'the revert names the re-created domain',
  );
});

test("a domain's uploaded certificate is part of its state: the key masked in the diff, a removal reverted brings the same pair back, an upload reverted removes it", async () => {
  const host = `${uniq()}.audit.test`;
  const created = await c.req('POST', '/api/domains', { hostname: host, redirect_to: 'example.org' });
  assert.equal(created.status, 201, created.text);
  const id = created.body.domain.id;
  const dir = await mkdtemp(join(tmpdir(), 'svc-audit-pki-'));
  try {
    const pair = await issue(await makeCa(dir), [host]);
    assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
    const up = await c.req('POST', `/api/domains/${id}/certificate`, {
      cert_pem: pair.certPem,
      key_pem: pair.keyPem,
    });
    assert.equal(up.status, 200, up.text);
    // Through the service's own handle: the same rows on SQLite and PostgreSQL.
    const stored = () =>
      s.env.db
        .selectFrom('domain_certificates')
        .select('fingerprint256')
        .where('domain_id', '=', id)
        .executeTakeFirst();
    const fingerprint = (await stored())?.fingerprint256;
    assert.ok(fingerprint);
    const upload = await lastEntry('domain.certificate_uploaded', id);
    assert.equal(upload.revertible, true);
    const diff = await c.req('GET', `/api/audit/${upload.id}/diff`);
    assert.equal(diff.status, 200, diff.text);
    const keyRow = diff.body.rows.find((r: any) => r.field === 'certificate_key');
    assert.deepEqual(keyRow, { field: 'certificate_key', status: 'added', masked: true });
    assert.equal(diff.body.rows.find((r: any) => r.field === 'certificate').status, 'added');
    assert.ok(
      !diff.text.includes('PRIVATE KEY') && !diff.text.includes('sealed'),
      'neither the key nor its envelope is shown',
    );

    const del = await c.req('DELETE', `/api/domains/${id}/certificate`);
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.domain.certificate?.source === 'uploaded', false);
    const removal = await lastEntry('domain.certificate_removed', id);
    const rev = await c.req('POST', `/api/audit/${removal.id}/revert`);
    assert.equal(rev.status, 200, rev.text);
    const back = (await c.req('GET', `/api/domains/${id}`)).body.domain;
    assert.equal(back.certificate?.source, 'uploaded', JSON.stringify(back.certificate));
    assert.equal((await stored())?.fingerprint256, fingerprint, 'the same certificate is stored again');

    // The upload's own entry: the target is as it left it, so its revert removes the certificate.
    const undo = await c.req('POST', `/api/audit/${upload.id}/revert`);
    assert.equal(undo.status, 200, undo.text);
    assert.notEqual((await c.req('GET', `/api/domains/${id}`)).body.domain.certificate?.source, 'uploaded');
    assert.equal(await stored(), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('no secret value is stored in clear in the audit table or anywhere in the database files', async () => {
  const app = await newApp();
  const canary = 'canary_' + randomBytes(8).toString('hex');
  await putEnv(app, [{ key: 'C', value: canary, secret: true }]);
  await putEnv(app, [{ key: 'C', value: canary + '_2', secret: true }]);
  const entry = await lastEntry('app.env_replaced', app);
  assert.equal((await c.req('POST', `/api/audit/${entry.id}/revert`)).status, 200);
  assert.equal((await reveal(c, app, 'C')).body.value, canary);

  const rows = (await s.env.db.selectFrom('audit').selectAll().execute()) as Array<Record<string, unknown>>;
  const dump = JSON.stringify(rows);
  assert.ok(
    rows.some((r) => r.state_before && String(r.state_before).includes('"masked":true')),
    'the state was recorded',
  );
  for (const secret of [canary, SECRET_A, SECRET_B, ADMIN.password])
    assert.equal(dump.includes(secret), false, 'a secret is in the audit table in clear');
  // The files themselves (SQLite: the database, its WAL and shared memory; none on PostgreSQL).
  for (const f of await readdir(s.dataDir)) {
    if (!f.startsWith('svc.db')) continue;
    const bytes = await readFile(join(s.dataDir, f));
    assert.equal(bytes.includes(canary), false, `${f} holds the secret in clear`);
    assert.equal(bytes.includes(SECRET_A), false, `${f} holds the secret in clear`);
  }
});

// The diffable targets of the contract: a route that changes one and forgets to declare its state
// would make its entries silently not revertible.
test('every route that changes a diffable target declares the state the audit stage records', async () => {
  const diffable: Array<[RegExp, string]> = [
    [/^\/api\/apps\/:id\/env$/, 'app_env'],
    [/^\/api\/apps\/:id$/, 'app'],
    [/^\/api\/apps\/:id\/services\/:name$/, 'service'],
    [/^\/api\/apps\/:id\/triggers(\/:tid)?$/, 'triggers'],
    [/^\/api\/(apps\/:id\/)?domains(\/:id)?$/, 'domain'],
    [/^\/api\/domains\/:id\/certificate$/, 'domain'],
    [/^\/api\/instance\/base-domain$/, 'base_domain'],
    [/^\/api\/instance\/deploy-concurrency$/, 'deploy_concurrency'],
    [/^\/api\/settings\/notifications(\/:id)?$/, 'notification_channel'],
  ];
  let checked = 0;
  for (const r of routes) {
    const kind = diffable.find(([re]) => re.test(r.pattern))?.[1];
    if (!kind) continue;
    const mod = await routeModule(r);
    for (const m of METHODS) {
      const h = mod[m];
      if (!h || m === 'GET') continue;
      // Deleting an app removes the app itself: not a revertible change.
      if (r.pattern === '/api/apps/:id' && m === 'DELETE') continue;
      const state = (h.spec.audit as { state?: { kind?: string } } | undefined)?.state;
      assert.ok(
        state && typeof state === 'object' && state.kind === kind,
        `${m} ${r.pattern} declares no ${kind} state`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 12, `only ${checked} routes checked`);
});

test('a service setting change reverts to the recorded port and health path', async () => {
  const app = await newApp();
  assert.equal(
    (await c.req('PATCH', `/api/apps/${app}/services/app`, { port: 8080, health_path: '/up' })).status,
    200,
  );
  assert.equal((await c.req('PATCH', `/api/apps/${app}/services/app`, { port: 9090 })).status, 200);
  const entry = await lastEntry('app.service_updated', app);
  const d = await c.req('GET', `/api/audit/${entry.id}/diff`);
  assert.deepEqual(d.body.rows, [
    { field: 'drain_s', status: 'unchanged', before: 30, after: 30, masked: false },
    { field: 'health_path', status: 'unchanged', before: '/up', after: '/up', masked: false },
    { field: 'port', status: 'changed', before: 8080, after: 9090, masked: false },
  ]);
  assert.equal((await c.req('POST', `/api/audit/${entry.id}/revert`)).status, 200);
  // A PATCH that sets only the health path answers the settings now in force.
  const now = await c.req('PATCH', `/api/apps/${app}/services/app`, { health_path: '/up' });
  assert.deepEqual(
    { port: now.body.port, health_path: now.body.health_path },
    { port: 8080, health_path: '/up' },
  );
});

test('notification channels: a URL change is masked in the diff, and its revert (and the revert of a deletion) delivers to the real old URL again', async () => {
  const { startReceiver, receiverResolve } = await import('../../_support/receiver.js');
  const recv = await startReceiver();
  const ns = await startTestApp({ SVC_NOTIFY_ALLOW: '127.0.0.1' });
  try {
    Object.assign(ns.env.notifier.transport, { agent: recv.agent, resolve: receiverResolve });
    const nc = await adminClient(ns);
    const token = 'hooktoken_' + randomBytes(8).toString('hex');
    const created = await nc.req('POST', '/api/settings/notifications', {
      kind: 'slack',
      name: 'ops',
      url: recv.url(`/old/${token}`),
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.channel.id;
    const patched = await nc.req('PATCH', `/api/settings/notifications/${id}`, {
      name: 'ops-new',
      url: recv.url('/new/other'),
      enabled: false,
    });
    assert.equal(patched.status, 200, patched.text);
    const entry = (await nc.req('GET', `/api/audit?action=notification.channel_updated&limit=1`)).body
      .items[0];
    const diff = await nc.req('GET', `/api/audit/${entry.id}/diff`);
    const rows = Object.fromEntries(diff.body.rows.map((r: any) => [r.field, r]));
    assert.deepEqual(rows.url, { field: 'url', status: 'changed', masked: true });
    assert.deepEqual(rows.name, {
      field: 'name',
      status: 'changed',
      before: 'ops',
      after: 'ops-new',
      masked: false,
    });
    assert.deepEqual(rows.enabled, {
      field: 'enabled',
      status: 'changed',
      before: true,
      after: false,
      masked: false,
    });
    assert.ok(!diff.text.includes(token));

    assert.equal((await nc.req('POST', `/api/audit/${entry.id}/revert`)).status, 200);
    const back = (await nc.req('GET', `/api/settings/notifications/${id}`)).body;
    assert.equal(back.name, 'ops');
    assert.equal(back.enabled, true);
    const sent = await nc.req('POST', `/api/settings/notifications/${id}/test`);
    assert.equal(sent.status, 200, sent.text);
    assert.ok(
      recv.received.some((r) => r.path === `/old/${token}`),
      'the test message went to the restored URL',
    );

    // Deleted, then the deletion reverted: a channel with the same URL again.
    assert.equal((await nc.req('DELETE', `/api/settings/notifications/${id}`)).status, 204);
    const del = (await nc.req('GET', `/api/audit?action=notification.channel_deleted&limit=1`)).body.items[0];
    const rev = await nc.req('POST', `/api/audit/${del.id}/revert`);
    assert.equal(rev.status, 200, rev.text);
    const again = (await nc.req('GET', '/api/settings/notifications')).body.items;
    assert.equal(again.length, 1);
    assert.equal(again[0].name, 'ops');
    const before = recv.received.length;
    assert.equal((await nc.req('POST', `/api/settings/notifications/${again[0].id}/test`)).status, 200);
    assert.ok(recv.received.slice(before).some((r) => r.path === `/old/${token}`));

    assert.equal(
      JSON.stringify(await ns.env.db.selectFrom('audit').selectAll().execute()).includes(token),
      false,
      'the channel URL is not in the audit table in clear',
    );
  } finally {
    await ns.stop();
    await recv.close();
  }
});

// docs/api.md "Audit diff and revert": {id, at, actor: {type, id, name}, action, target: {type, id},
// ip, outcome, summary, revertible, reverted_at}, with `action` the method and route pattern.
function assertContractEntry(e: any, why: string) {
  const types: Record<string, (v: unknown) => boolean> = {
    id: (v) => typeof v === 'string' && /^\d+$/.test(v),
    at: (v) => typeof v === 'string' && !Number.isNaN(Date.parse(v as string)),
    actor: (v: any) =>
      v !== null &&
      typeof v === 'object' &&
      ['user', 'token', 'system'].includes(v.type) &&
      'id' in v &&
      'name' in v &&
      (v.id === null || typeof v.id === 'string') &&
      (v.name === null || typeof v.name === 'string'),
    action: (v) => typeof v === 'string' && /^(GET|POST|PUT|PATCH|DELETE) \/[^\s:]*$/.test(v as string),
    target: (v: any) =>
      v !== null &&
      typeof v === 'object' &&
      typeof v.type === 'string' &&
      (v.id === null || typeof v.id === 'string'),
    ip: (v) => v === null || typeof v === 'string',
    outcome: (v) => v === 'ok' || v === 'error',
    summary: (v) => typeof v === 'string' && (v as string).length > 0,
    revertible: (v) => typeof v === 'boolean',
    reverted_at: (v) => v === null || typeof v === 'string',
  };
  for (const [field, ok] of Object.entries(types))
    assert.ok(field in e && ok(e[field]), `${why}: ${field} is ${JSON.stringify(e[field])}`);
  // The contract's actors: {type: "user", id, name}, {type: "token", id, name, owner_id}, {type: "system", name}.
  const fields = e.actor.type === 'token' ? ['id', 'name', 'owner_id', 'type'] : ['id', 'name', 'type'];
  assert.deepEqual(Object.keys(e.actor).sort(), fields, `${why}: actor has exactly the contract's fields`);
  assert.deepEqual(
    Object.keys(e.target).sort(),
    ['id', 'type'],
    `${why}: target has exactly the contract's fields`,
  );
}

test("GET /api/audit answers entries in the contract's shape: a user's, a token's and a failed one; filters use the same meanings", async () => {
  const app = await newApp();
  const appName = (await c.req('GET', `/api/apps/${app}`)).body.app.name;
  await putEnv(app, [{ key: 'BY_USER', value: '1', secret: false }]);

  const up = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(up.status, 200, up.text);
  const tokenName = 'ci-' + uniq();
  const made = await c.req('POST', '/api/auth/api-tokens', { name: tokenName });
  assert.equal(made.status, 201, made.text);
  const bot = new Client(s.url);
  bot.bearer = made.body.token;
  const byToken = await bot.req('PUT', `/api/apps/${app}/env`, {
    items: [{ key: 'BY_TOKEN', value: '2', secret: false }],
  });
  assert.equal(byToken.status, 200, byToken.text);
  const bad = await bot.req('PUT', `/api/apps/${app}/env`, {
    items: [
      { key: 'TWICE', value: 'x', secret: false },
      { key: 'TWICE', value: 'y', secret: false },
    ],
  });
  assert.equal(bad.status, 400, bad.text);

  const r = await c.req(
    'GET',
    `/api/audit?target=${app}&action=${encodeURIComponent('PUT /api/apps/{id}/env')}&limit=10`,
  );
  assert.equal(r.status, 200, r.text);
  const [failed, token, user] = r.body.items;
  for (const [e, why] of [
    [user, 'user entry'],
    [token, 'token entry'],
    [failed, 'failed entry'],
  ] as const) {
    assertContractEntry(e, why);
    assert.equal(e.action, 'PUT /api/apps/{id}/env', why);
    assert.deepEqual(e.target, { type: 'app', id: app }, why);
    assert.equal(e.ip, '127.0.0.1', why);
  }
  assert.deepEqual(user.actor, { type: 'user', id: user.user.id, name: ADMIN.username });
  assert.equal(user.outcome, 'ok');
  assert.equal(user.revertible, true);
  assert.equal(user.reverted_at, null);
  assert.ok(user.summary.endsWith(`: ${appName}`), user.summary);
  assert.deepEqual(token.actor, {
    type: 'token',
    id: token.actor.id,
    name: tokenName,
    owner_id: user.user.id,
  });
  assert.match(token.actor.id, /\S/);
  assert.notEqual(token.actor.id, user.actor.id, "a token's id is its own, not its operator's");
  assert.equal(token.user.username, ADMIN.username, "the token's operator is kept beside it");
  assert.equal(token.outcome, 'ok');
  assert.equal(failed.actor.type, 'token');
  assert.equal(failed.outcome, 'error');
  assert.equal(failed.status, 400);
  assert.equal(failed.revertible, false);
  assert.match(failed.summary, /\(failed\)/);

  // A refused sign-in: the claimed name, no operator id, an error, on the login route.
  const stranger = new Client(s.url);
  assert.equal(
    (
      await stranger.req('POST', '/api/auth/login', {
        username: 'mallory-' + uniq(),
        password: 'not it at all',
      })
    ).status,
    401,
  );
  const refused = (await c.req('GET', '/api/audit?action=auth.login_failed&limit=1')).body.items[0];
  assertContractEntry(refused, 'refused sign-in');
  assert.equal(refused.action, 'POST /api/auth/login');
  assert.equal(refused.event, 'auth.login_failed');
  assert.equal(refused.actor.type, 'user');
  assert.equal(refused.actor.id, null);
  assert.match(refused.actor.name, /^mallory-/);
  assert.equal(refused.outcome, 'error');

  // Filters: the actor by token name or id, by username (the operator's own and their tokens'),
  // the action by path prefix and by method, the target by id.
  const ids = (q: string) =>
    c.req('GET', `/api/audit?${q}&limit=200`).then((x) => {
      assert.equal(x.status, 200, x.text);
      return x.body.items.map((i: any) => i.id) as string[];
    });
  assert.deepEqual(await ids(`actor=${tokenName}`), [failed.id, token.id]);
  assert.deepEqual(await ids(`actor=${token.actor.id}`), [failed.id, token.id]);
  const mine = await ids(`actor=${ADMIN.username}&target=${app}`);
  for (const id of [failed.id, token.id, user.id])
    assert.ok(mine.includes(id), `actor=${ADMIN.username} finds ${id}`);
  assert.deepEqual(await ids(`actor=${tokenName}&action=${encodeURIComponent('/api/apps/{id}/env')}`), [
    failed.id,
    token.id,
  ]);
  assert.deepEqual(await ids(`target=${app}&action=${encodeURIComponent('PUT ')}`), [
    failed.id,
    token.id,
    user.id,
  ]);
  assert.deepEqual(await ids(`target=${app}&action=${encodeURIComponent('DELETE ')}`), []);
});
