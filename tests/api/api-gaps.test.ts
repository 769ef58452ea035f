// The API's small gaps, each played over HTTP against the real server: revealing a secret needs a
// step-up (a stolen session or token alone reads nothing); a trigger is paused in place, audited
// and revertible; one variable is set or removed, and the set's ETag is honoured by If-Match
// atomically (two editors never overwrite each other); every webhook delivery leaves a bounded log
// line, never its payload or signature; a notification channel's creation is wrapped like every
// other; host vitals are never zero-filled.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { adminClient, apiToken, Client, ADMIN } from '../_support/server.js';
import { startTestApp, type TestApp } from '../_support/request.js';
import { githubPing, githubPush, SHA_A, SHA_B } from '../unit/webhooks/_payloads.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';

let s: TestApp;
let c: Client;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
});
after(async () => {
  await s?.stop();
});

const uniq = () => `g-${randomBytes(3).toString('hex')}`;

async function imageApp(): Promise<string> {
  const r = await c.req('POST', '/api/apps', {
    name: uniq(),
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app.id;
}

// An unreachable remote: a deployment a delivery queues fails at once, without the network.
async function gitApp(): Promise<{ id: string; secret: string }> {
  const r = await c.req('POST', '/api/apps', {
    name: uniq(),
    source: { type: 'git', repo_url: 'ssh://git@127.0.0.1:1/srv/app.git', branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  const secret = (await c.req('POST', `/api/apps/${r.body.app.id}/webhook/regenerate`)).body.secret;
  return { id: r.body.app.id, secret };
}

async function stepUp(client: Client): Promise<void> {
  assert.equal((await client.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
}

/** Ends the session's step-up, as if its five minutes had passed. */
async function expireStepUp(): Promise<void> {
  await s.env.db.updateTable('sessions').set({ step_up_until: null }).execute();
  await s.env.db.updateTable('api_tokens').set({ step_up_until: null }).execute();
  const { invalidateCredentials } = await import('#lib/auth/cache.js');
  invalidateCredentials();
}

/** The entries of a change that went through, newest first (refused attempts are entries too). */
async function entries(action: string, target: string): Promise<any[]> {
  const r = await c.req('GET', `/api/audit?action=${action}&target=${target}&limit=50`);
  assert.equal(r.status, 200, r.text);
  return r.body.items.filter((i: any) => i.outcome === 'ok');
}

async function lastEntry(action: string, target: string): Promise<any> {
  const [entry] = await entries(action, target);
  assert.ok(entry, `an audit entry ${action}`);
  return entry;
}

test('reveal needs a recent step-up: a session or an API token without one reads nothing (403 step_up_required)', async () => {
  const app = await imageApp();
  const value = 'pw_' + randomBytes(8).toString('hex');
  assert.equal(
    (await c.req('PUT', `/api/apps/${app}/env`, { items: [{ key: 'DB_PASSWORD', value, secret: true }] }))
      .status,
    200,
  );
  const token = await apiToken(c, 'reader');
  await expireStepUp();

  const bySession = await c.req('GET', `/api/apps/${app}/env/DB_PASSWORD/reveal`);
  assert.equal(bySession.status, 403, bySession.text);
  assert.equal(bySession.body.code, 'step_up_required');
  assert.ok(!bySession.text.includes(value));
  const bearer = new Client(s.url);
  bearer.bearer = token;
  const byToken = await bearer.req('GET', `/api/apps/${app}/env/DB_PASSWORD/reveal`);
  assert.equal(byToken.status, 403, byToken.text);
  assert.equal(byToken.body.code, 'step_up_required');
  assert.ok(!byToken.text.includes(value));

  // The token steps up for itself (bound to the credential that did it), then reads.
  await stepUp(bearer);
  assert.deepEqual((await bearer.req('GET', `/api/apps/${app}/env/DB_PASSWORD/reveal`)).body, {
    key: 'DB_PASSWORD',
    value,
  });
  assert.equal(
    (await c.req('GET', `/api/apps/${app}/env/DB_PASSWORD/reveal`)).status,
    403,
    "the token's step-up is not the session's",
  );
  await stepUp(c);
  assert.equal((await c.req('GET', `/api/apps/${app}/env/DB_PASSWORD/reveal`)).body.value, value);

  const doc = (await c.req('GET', '/api/openapi.json')).body;
  assert.equal(doc.paths['/api/apps/{id}/env/{key}/reveal'].get['x-step-up'], true);
});

test('PATCH a trigger: paused in place (same id), validated, audited with a diff, and reverted', async () => {
  const app = await gitApp();
  const t = (await c.req('POST', `/api/apps/${app.id}/triggers`, { event: 'push', pattern: 'release/*' }))
    .body;
  const paused = await c.req('PATCH', `/api/apps/${app.id}/triggers/${t.id}`, { enabled: false });
  assert.equal(paused.status, 200, paused.text);
  assert.deepEqual(paused.body, { id: t.id, event: 'push', pattern: 'release/*', enabled: false });
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/triggers`)).body.items, [paused.body]);

  // A paused rule does not match: with no enabled rule, only the app's own branch deploys.
  const r = await deliver(app.id, github(app.secret, 'push', githubPush('refs/heads/release/1')));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.match(r.body.ignored, /not the app's branch "main"/);

  for (const bad of [
    {},
    { pattern: 'a\u0001b' },
    { event: 'branch' },
    { enabled: 'no' },
    { pattern: 'x', extra: 1 },
  ]) {
    const b = await c.req('PATCH', `/api/apps/${app.id}/triggers/${t.id}`, bad);
    assert.equal(b.status, 400, JSON.stringify(bad));
    assert.equal(b.body.code, 'bad_request');
  }
  assert.equal(
    (await c.req('PATCH', `/api/apps/${app.id}/triggers/01m7xsp88xare7pbe7126vxpxd`, { enabled: true }))
      .status,
    404,
  );
  assert.deepEqual(
    (await c.req('GET', `/api/apps/${app.id}/triggers`)).body.items,
    [paused.body],
    'refused patches changed nothing',
  );

  const moved = await c.req('PATCH', `/api/apps/${app.id}/triggers/${t.id}`, {
    pattern: 'hotfix/**',
    event: 'push',
  });
  assert.equal(moved.status, 200, moved.text);
  const entry = await lastEntry('app.trigger_updated', app.id);
  assert.equal(entry.action, 'PATCH /api/apps/{id}/triggers/{tid}');
  assert.equal(entry.revertible, true);
  const diff = await c.req('GET', `/api/audit/${entry.id}/diff`);
  assert.equal(diff.status, 200, diff.text);
  assert.deepEqual(
    diff.body.rows.find((row: any) => row.field === t.id),
    {
      field: t.id,
      status: 'changed',
      before: { event: 'push', pattern: 'release/*', enabled: false },
      after: { event: 'push', pattern: 'hotfix/**', enabled: false },
      masked: false,
    },
  );
  const rev = await c.req('POST', `/api/audit/${entry.id}/revert`);
  assert.equal(rev.status, 200, rev.text);
  // Reverting the pause too brings the rule back as it was first, under the same id.
  const pause = (await entries('app.trigger_updated', app.id)).at(-1);
  assert.equal((await c.req('POST', `/api/audit/${pause.id}/revert`, { force: true })).status, 200);
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/triggers`)).body.items, [t]);
});

test('one variable: PUT creates (201) or replaces (200), a secret answers value null; DELETE is 204, then 404; audited and revertible', async () => {
  const app = await imageApp();
  const created = await c.req('PUT', `/api/apps/${app}/env/LOG_LEVEL`, { value: 'info', secret: false });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(created.body, { key: 'LOG_LEVEL', secret: false, value: 'info' });
  const replaced = await c.req('PUT', `/api/apps/${app}/env/LOG_LEVEL`, { value: 'debug' });
  assert.equal(replaced.status, 200, replaced.text);
  assert.deepEqual(
    replaced.body,
    { key: 'LOG_LEVEL', secret: false, value: 'debug' },
    'an existing key keeps its flag',
  );
  const secret = 'tok_' + randomBytes(8).toString('hex');
  const sec = await c.req('PUT', `/api/apps/${app}/env/API_TOKEN`, { value: secret });
  assert.equal(sec.status, 201, sec.text);
  assert.deepEqual(
    sec.body,
    { key: 'API_TOKEN', secret: true, value: null },
    'a new key is secret by default',
  );
  assert.ok(!sec.text.includes(secret));
  for (const [key, body] of [
    ['1BAD', { value: 'x' }],
    ['OK', { value: null }],
    ['OK', { value: 'x', extra: true }],
    ['OK', { value: 'x'.repeat(64 * 1024 + 1) }],
  ] as const) {
    const r = await c.req('PUT', `/api/apps/${app}/env/${key}`, body);
    assert.equal(r.status, 400, `${key} ${JSON.stringify(body).slice(0, 40)}`);
  }
  const list = (await c.req('GET', `/api/apps/${app}/env`)).body.items;
  assert.deepEqual(list, [
    { key: 'API_TOKEN', secret: true, value: null },
    { key: 'LOG_LEVEL', secret: false, value: 'debug' },
  ]);

  assert.equal((await c.req('DELETE', `/api/apps/${app}/env/NOPE`)).status, 404);
  const del = await c.req('DELETE', `/api/apps/${app}/env/API_TOKEN`);
  assert.equal(del.status, 204, del.text);
  assert.equal((await c.req('DELETE', `/api/apps/${app}/env/API_TOKEN`)).status, 404);
  assert.deepEqual((await c.req('GET', `/api/apps/${app}/env`)).body.items, [
    { key: 'LOG_LEVEL', secret: false, value: 'debug' },
  ]);

  // Both are audited with the env state: the removal's diff masks the secret, its revert restores it.
  const removal = await lastEntry('app.env_removed', app);
  assert.equal(removal.action, 'DELETE /api/apps/{id}/env/{key}');
  const diff = await c.req('GET', `/api/audit/${removal.id}/diff`);
  assert.deepEqual(
    diff.body.rows.find((r: any) => r.field === 'API_TOKEN'),
    { field: 'API_TOKEN', status: 'removed', masked: true },
  );
  assert.ok(!diff.text.includes(secret));
  assert.equal((await c.req('POST', `/api/audit/${removal.id}/revert`)).status, 200);
  await stepUp(c);
  assert.equal((await c.req('GET', `/api/apps/${app}/env/API_TOKEN/reveal`)).body.value, secret);
  const set = await lastEntry('app.env_set', app);
  assert.equal(set.action, 'PUT /api/apps/{id}/env/{key}');
  assert.deepEqual(
    (await c.req('GET', `/api/audit/${set.id}/diff`)).body.rows.find((r: any) => r.field === 'API_TOKEN'),
    { field: 'API_TOKEN', status: 'added', masked: true },
  );
});

test('the set has a strong ETag that shows no value; If-Match that no longer matches is 412 and nothing changes', async () => {
  const app = await imageApp();
  const secret = 'sk_' + randomBytes(8).toString('hex');
  const put = await c.req('PUT', `/api/apps/${app}/env`, {
    items: [
      { key: 'A', value: 'one', secret: false },
      { key: 'S', value: secret, secret: true },
    ],
  });
  const first = put.headers.get('etag')!;
  assert.match(first, /^"[A-Za-z0-9_-]+"$/, 'a strong validator');
  const got = await c.req('GET', `/api/apps/${app}/env`);
  assert.equal(got.headers.get('etag'), first, 'the listing carries the tag the write answered');
  assert.equal(
    (await c.req('GET', `/api/apps/${app}/env`)).headers.get('etag'),
    first,
    'stable while nothing changes',
  );
  assert.ok(!first.includes(secret) && !first.includes('one'));

  // Another editor changes only the secret's value (same keys, same flags): the tag moves.
  const other = await c.req('PUT', `/api/apps/${app}/env/S`, { value: secret + '-rotated' });
  const second = other.headers.get('etag')!;
  assert.notEqual(second, first);
  const before = (await c.req('GET', `/api/apps/${app}/env`)).body.items;

  // The first editor's writes, based on what they read, are all refused, and change nothing.
  const stale = { 'if-match': first };
  const attempts = [
    await c.req('PUT', `/api/apps/${app}/env`, { items: [{ key: 'A', value: 'two', secret: false }] }, stale),
    await c.req('PUT', `/api/apps/${app}/env/A`, { value: 'two' }, stale),
    await c.req('PUT', `/api/apps/${app}/env/NEW`, { value: 'x' }, stale),
    await c.req('DELETE', `/api/apps/${app}/env/S`, undefined, stale),
    await c.req('PUT', `/api/apps/${app}/env/A`, { value: 'two' }, { 'if-match': `W/${second}` }),
  ];
  for (const r of attempts) {
    assert.equal(r.status, 412, r.text);
    assert.equal(r.body.code, 'precondition_failed');
  }
  assert.deepEqual((await c.req('GET', `/api/apps/${app}/env`)).body.items, before);
  assert.equal((await c.req('GET', `/api/apps/${app}/env`)).headers.get('etag'), second);
  await stepUp(c);
  assert.equal((await c.req('GET', `/api/apps/${app}/env/S/reveal`)).body.value, secret + '-rotated');

  // With the current tag (alone, in a list, or `*`) the write goes through and answers the next tag.
  const ok = await c.req(
    'PUT',
    `/api/apps/${app}/env/A`,
    { value: 'two' },
    { 'if-match': `"nope", ${second}` },
  );
  assert.equal(ok.status, 200, ok.text);
  const third = ok.headers.get('etag')!;
  assert.notEqual(third, second);
  const star = await c.req('DELETE', `/api/apps/${app}/env/A`, undefined, { 'if-match': '*' });
  assert.equal(star.status, 204, star.text);
  assert.equal(star.headers.get('etag'), (await c.req('GET', `/api/apps/${app}/env`)).headers.get('etag'));
});

test('If-Match is checked and applied atomically: of concurrent writes based on one tag, exactly one lands', async () => {
  const app = await imageApp();
  const tag = (
    await c.req('PUT', `/api/apps/${app}/env`, { items: [{ key: 'BASE', value: '0', secret: false }] })
  ).headers.get('etag')!;
  const n = 12;
  const writes = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      i % 2
        ? c.req('PUT', `/api/apps/${app}/env/K${i}`, { value: String(i), secret: false }, { 'if-match': tag })
        : c.req(
            'PUT',
            `/api/apps/${app}/env`,
            {
              items: [
                { key: 'BASE', value: '0', secret: false },
                { key: `K${i}`, value: String(i), secret: false },
              ],
            },
            { 'if-match': tag },
          ),
    ),
  );
  const statuses = writes.map((w) => w.status);
  assert.equal(statuses.filter((x) => x === 412).length, n - 1, statuses.join(','));
  assert.equal(statuses.filter((x) => x === 200 || x === 201).length, 1, statuses.join(','));
  const keys = (await c.req('GET', `/api/apps/${app}/env`)).body.items.map((i: any) => i.key);
  assert.equal(keys.length, 2, `only the winner's change is there: ${keys.join(',')}`);

  // Over HTTP the requests' arrival spreads them out; started in one tick, the routes' own
  // functions meet exactly in the window a check outside the write would leave open.
  const now = (await c.req('GET', `/api/apps/${app}/env`)).headers.get('etag')!;
  const { setEnvVar, replaceEnvSet, removeEnvVar } = await import('#lib/apps/env.js');
  const { db, sealer } = s.env;
  const racers = await Promise.allSettled([
    setEnvVar(db, sealer, app, { key: 'X1', value: '1' }, now),
    replaceEnvSet(db, sealer, app, [{ key: 'X2', value: '2' }], now),
    removeEnvVar(db, sealer, app, 'BASE', now),
    setEnvVar(db, sealer, app, { key: 'BASE', value: 'changed' }, now),
  ]);
  assert.equal(
    racers.filter((r) => r.status === 'fulfilled').length,
    1,
    JSON.stringify(racers.map((r) => r.status)),
  );
  for (const r of racers) if (r.status === 'rejected') assert.equal(r.reason.code, 'precondition_failed');
});

let deliveries = 0;
function github(secret: string, event: string, payload: unknown, extra: Record<string, string> = {}) {
  const body = Buffer.from(JSON.stringify(payload));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': `d-${++deliveries}-${randomBytes(4).toString('hex')}`,
    'x-hub-signature-256': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex'),
  };
  return { body, headers: { ...headers, ...extra } };
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

test('webhook deliveries: every one is logged with its outcome and reason, newest first, never its payload or signature', async () => {
  const app = await gitApp();
  const other = await gitApp();
  const forged = github(app.secret + 'x', 'push', githubPush('refs/heads/main', SHA_B));
  assert.equal((await deliver(app.id, forged)).status, 401);
  assert.equal((await deliver(app.id, github(app.secret, 'ping', githubPing))).status, 200);
  const marker = 'commit-message-' + randomBytes(6).toString('hex');
  assert.equal(
    (await deliver(app.id, github(app.secret, 'push', githubPush('refs/heads/feature-x', SHA_B, marker))))
      .status,
    200,
  );
  const push = github(app.secret, 'push', githubPush('refs/heads/main', SHA_A, marker));
  const deployed = await deliver(app.id, push);
  assert.equal(deployed.status, 202, JSON.stringify(deployed.body));
  assert.equal((await deliver(app.id, push)).body.duplicate, true);
  // Unknown app: refused as before, and nothing to log it under.
  assert.equal(
    (await deliver('01m7xsp88xare7pbe7126vxpxd', github(app.secret, 'ping', githubPing))).status,
    401,
  );

  const list = await c.req('GET', `/api/apps/${app.id}/webhook/deliveries`);
  assert.equal(list.status, 200, list.text);
  const items = list.body.items;
  assert.deepEqual(
    items.map((i: any) => i.outcome),
    ['duplicate', 'deployed', 'ignored', 'ignored', 'rejected'],
  );
  const [dup, dep, ign, ping, rej] = items;
  assert.deepEqual(
    { ...dep, id: undefined, at: undefined },
    {
      id: undefined,
      at: undefined,
      provider: 'github',
      event: 'push',
      delivery_id: push.headers['x-github-delivery'],
      ref: 'main',
      commit: SHA_A,
      outcome: 'deployed',
      reason: null,
      deployment_id: deployed.body.deployment.id,
    },
  );
  assert.match(dup.reason, /already received/);
  assert.equal(ign.ref, 'feature-x');
  assert.equal(ign.commit, SHA_B);
  assert.match(ign.reason, /not the app's branch "main"/);
  assert.match(ping.reason, /ping/);
  assert.deepEqual(
    {
      provider: rej.provider,
      event: rej.event,
      ref: rej.ref,
      commit: rej.commit,
      deployment_id: rej.deployment_id,
    },
    { provider: 'github', event: 'push', ref: null, commit: null, deployment_id: null },
  );
  assert.match(rej.reason, /signature/);
  for (let i = 1; i < items.length; i++)
    assert.ok(items[i - 1].at >= items[i].at && Number(items[i - 1].id) > Number(items[i].id));
  assert.deepEqual(
    (await c.req('GET', `/api/apps/${other.id}/webhook/deliveries`)).body.items,
    [],
    'per app',
  );

  // Neither the payload nor any signature is stored.
  const rows = JSON.stringify(await s.env.db.selectFrom('webhook_delivery_log').selectAll().execute());
  assert.ok(!rows.includes(marker), 'no payload');
  for (const sig of [forged.headers['x-hub-signature-256']!, push.headers['x-hub-signature-256']!])
    assert.ok(!rows.includes(sig.slice(7, 31)), 'no signature');
});

test('webhook deliveries refused before verification (compressed, over 1 MiB) are logged as rejected too', async () => {
  const app = await gitApp();
  const gz = github(app.secret, 'push', githubPush('refs/heads/main'), { 'content-encoding': 'gzip' });
  assert.equal((await deliver(app.id, gz)).status, 400);
  const big = github(app.secret, 'push', { ...githubPush('refs/heads/main'), pad: 'x'.repeat(1_100_000) });
  assert.equal((await deliver(app.id, big)).status, 413);
  const items = (await c.req('GET', `/api/apps/${app.id}/webhook/deliveries`)).body.items;
  assert.deepEqual(
    items.map((i: any) => [i.outcome, i.provider, i.event]),
    [
      ['rejected', 'github', 'push'],
      ['rejected', 'github', 'push'],
    ],
  );
  assert.match(items[0].reason, /larger than/);
  assert.match(items[1].reason, /Compressed/);
});

test('webhook deliveries: a flood (even of forged ones) keeps only the last 50 per app', async () => {
  const app = await gitApp();
  const other = await gitApp();
  assert.equal((await deliver(other.id, github(other.secret, 'ping', githubPing))).status, 200);
  for (let i = 0; i < 56; i++)
    assert.equal((await deliver(app.id, github('wrong', 'push', githubPush('refs/heads/main')))).status, 401);
  assert.equal((await deliver(app.id, github(app.secret, 'ping', githubPing))).status, 200);
  const items = (await c.req('GET', `/api/apps/${app.id}/webhook/deliveries`)).body.items;
  assert.equal(items.length, 50);
  assert.equal(items[0].outcome, 'ignored', 'the newest first');
  const count = async (id: string) =>
    Number(
      (
        await s.env.db
          .selectFrom('webhook_delivery_log')
          .select(s.env.db.fn.countAll<number>().as('n'))
          .where('app_id', '=', id)
          .executeTakeFirstOrThrow()
      ).n,
    );
  assert.equal(await count(app.id), 50, 'pruned on insert');
  assert.equal(await count(other.id), 1, "another app's log is its own");
});

test('POST /api/settings/notifications answers 201 {"channel": ...}, wrapped like every other creation', async () => {
  const resolve = async (): Promise<ResolvedAddress[]> => [{ address: '8.8.8.8', family: 4 }];
  Object.assign(s.env.notifier.transport, { resolve });
  const r = await c.req('POST', '/api/settings/notifications', {
    kind: 'slack',
    name: 'ops',
    url: 'https://hooks.example.net/services/T/B/secret-abcd',
  });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(Object.keys(r.body), ['channel']);
  assert.equal(r.body.channel.name, 'ops');
  assert.equal(r.body.channel.url_hint, 'hooks.example.net/…abcd');
  assert.ok(!r.text.includes('secret-abcd'));
  assert.equal(
    (await c.req('GET', `/api/settings/notifications/${r.body.channel.id}`)).body.id,
    r.body.channel.id,
  );
});

test('host metrics of a fresh server: a step without a vitals sample is absent, never zeros; request points stay zero-filled', async () => {
  const fresh = await startTestApp({}, { background: true });
  try {
    const fc = await adminClient(fresh);
    const r = await fc.req('GET', '/api/host/metrics?range=1h');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.points.length, 360, 'request points keep their zero-filled gaps');
    assert.ok(
      r.body.vitals.length < r.body.points.length,
      `only the steps the sampler reached: ${r.body.vitals.length}`,
    );
    for (const v of r.body.vitals) {
      assert.ok(v.mem_total_bytes > 0 && v.disk_total_bytes > 0, `a real reading: ${JSON.stringify(v)}`);
      assert.ok(
        r.body.points.some((p: any) => p.t === v.t),
        'aligned to a step of the points',
      );
    }
  } finally {
    await fresh.stop();
  }
});
