// An app's variables over the API with the typed client: revealing a secret needs a step-up (a
// stolen session or token alone reads nothing); one variable is set or removed, audited and
// revertible; the set's ETag is honoured by If-Match atomically (two editors never overwrite each
// other).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminClient, apiToken, type Client } from '../../_support/server.js';
import { startTestApp, typedClient, typedSession, type TestApp } from '../../_support/request.js';
import type { SvcClient } from '../../../client/index.js';
import { imageApp, stepUp, expireStepUp, lastEntry } from './_apps.js';

let s: TestApp;
let c: Client;
let api: SvcClient;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
  api = typedSession(s, c);
});
after(async () => {
  await s?.stop();
});

const at = (id: string, key: string) => ({ params: { path: { id, key } } });
const listOf = async (id: string) =>
  (await api.GET('/api/apps/{id}/env', { params: { path: { id } } })).data!.items;
const tagOf = async (id: string) =>
  (await api.GET('/api/apps/{id}/env', { params: { path: { id } } })).response.headers.get('etag');

test('reveal needs a recent step-up: a session or an API token without one reads nothing (403 step_up_required)', async () => {
  const app = await imageApp(api);
  const value = 'pw_' + randomBytes(8).toString('hex');
  const put = await api.PUT('/api/apps/{id}/env', {
    params: { path: { id: app } },
    body: { items: [{ key: 'DB_PASSWORD', value, secret: true }] },
  });
  assert.equal(put.response.status, 200);
  const token = await apiToken(c, 'reader');
  await expireStepUp(s);

  const bySession = await api.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'DB_PASSWORD'));
  assert.equal(bySession.response.status, 403, JSON.stringify(bySession.error));
  assert.equal(bySession.error!.code, 'step_up_required');
  assert.ok(!JSON.stringify(bySession.error).includes(value));
  const bearer = await typedClient(s, token);
  const byToken = await bearer.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'DB_PASSWORD'));
  assert.equal(byToken.response.status, 403, JSON.stringify(byToken.error));
  assert.equal(byToken.error!.code, 'step_up_required');
  assert.ok(!JSON.stringify(byToken.error).includes(value));

  // The token steps up for itself (bound to the credential that did it), then reads.
  await stepUp(bearer);
  assert.deepEqual((await bearer.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'DB_PASSWORD'))).data, {
    key: 'DB_PASSWORD',
    value,
  });
  assert.equal(
    (await api.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'DB_PASSWORD'))).response.status,
    403,
    "the token's step-up is not the session's",
  );
  await stepUp(api);
  assert.equal((await api.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'DB_PASSWORD'))).data!.value, value);

  const doc = (await api.GET('/api/openapi.json')).data as any;
  assert.equal(doc.paths['/api/apps/{id}/env/{key}/reveal'].get['x-step-up'], true);
});

test('one variable: PUT creates (201) or replaces (200), a secret answers value null; DELETE is 204, then 404; audited and revertible', async () => {
  const app = await imageApp(api);
  const created = await api.PUT('/api/apps/{id}/env/{key}', {
    ...at(app, 'LOG_LEVEL'),
    body: { value: 'info', secret: false },
  });
  assert.equal(created.response.status, 201, JSON.stringify(created.error));
  assert.deepEqual(created.data, { key: 'LOG_LEVEL', secret: false, value: 'info' });
  const replaced = await api.PUT('/api/apps/{id}/env/{key}', {
    ...at(app, 'LOG_LEVEL'),
    body: { value: 'debug' },
  });
  assert.equal(replaced.response.status, 200, JSON.stringify(replaced.error));
  assert.deepEqual(
    replaced.data,
    { key: 'LOG_LEVEL', secret: false, value: 'debug' },
    'an existing key keeps its flag',
  );
  const secret = 'tok_' + randomBytes(8).toString('hex');
  const sec = await api.PUT('/api/apps/{id}/env/{key}', { ...at(app, 'API_TOKEN'), body: { value: secret } });
  assert.equal(sec.response.status, 201, JSON.stringify(sec.error));
  assert.deepEqual(
    sec.data,
    { key: 'API_TOKEN', secret: true, value: null },
    'a new key is secret by default',
  );
  assert.ok(!JSON.stringify(sec.data).includes(secret));
  for (const [key, body] of [
    ['1BAD', { value: 'x' }],
    ['OK', { value: null }],
    ['OK', { value: 'x', extra: true }],
    ['OK', { value: 'x'.repeat(64 * 1024 + 1) }],
  ] as const) {
    const r = await api.PUT('/api/apps/{id}/env/{key}', { ...at(app, key), body: body as never });
    assert.equal(r.response.status, 400, `${key} ${JSON.stringify(body).slice(0, 40)}`);
  }
  assert.deepEqual(await listOf(app), [
    { key: 'API_TOKEN', secret: true, value: null },
    { key: 'LOG_LEVEL', secret: false, value: 'debug' },
  ]);

  assert.equal((await api.DELETE('/api/apps/{id}/env/{key}', at(app, 'NOPE'))).response.status, 404);
  const del = await api.DELETE('/api/apps/{id}/env/{key}', at(app, 'API_TOKEN'));
  assert.equal(del.response.status, 204, JSON.stringify(del.error));
  assert.equal((await api.DELETE('/api/apps/{id}/env/{key}', at(app, 'API_TOKEN'))).response.status, 404);
  assert.deepEqual(await listOf(app), [{ key: 'LOG_LEVEL', secret: false, value: 'debug' }]);

  // Both are audited with the env state: the removal's diff masks the secret, its revert restores it.
  const removal = await lastEntry(api, 'app.env_removed', app);
  assert.equal(removal.action, 'DELETE /api/apps/{id}/env/{key}');
  const diff = await api.GET('/api/audit/{id}/diff', { params: { path: { id: removal.id } } });
  assert.deepEqual(
    diff.data!.rows.find((r) => r.field === 'API_TOKEN'),
    { field: 'API_TOKEN', status: 'removed', masked: true },
  );
  assert.ok(!JSON.stringify(diff.data).includes(secret));
  const revert = await api.POST('/api/audit/{id}/revert', { params: { path: { id: removal.id } }, body: {} });
  assert.equal(revert.response.status, 200);
  await stepUp(api);
  assert.equal((await api.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'API_TOKEN'))).data!.value, secret);
  const set = await lastEntry(api, 'app.env_set', app);
  assert.equal(set.action, 'PUT /api/apps/{id}/env/{key}');
  assert.deepEqual(
    (await api.GET('/api/audit/{id}/diff', { params: { path: { id: set.id } } })).data!.rows.find(
      (r) => r.field === 'API_TOKEN',
    ),
    { field: 'API_TOKEN', status: 'added', masked: true },
  );
});

test('the set has a strong ETag that shows no value; If-Match that no longer matches is 412 and nothing changes', async () => {
  const app = await imageApp(api);
  const secret = 'sk_' + randomBytes(8).toString('hex');
  const put = await api.PUT('/api/apps/{id}/env', {
    params: { path: { id: app } },
    body: {
      items: [
        { key: 'A', value: 'one', secret: false },
        { key: 'S', value: secret, secret: true },
      ],
    },
  });
  const first = put.response.headers.get('etag')!;
  assert.match(first, /^"[A-Za-z0-9_-]+"$/, 'a strong validator');
  assert.equal(await tagOf(app), first, 'the listing carries the tag the write answered');
  assert.equal(await tagOf(app), first, 'stable while nothing changes');
  assert.ok(!first.includes(secret) && !first.includes('one'));

  // Another editor changes only the secret's value (same keys, same flags): the tag moves.
  const other = await api.PUT('/api/apps/{id}/env/{key}', {
    ...at(app, 'S'),
    body: { value: secret + '-rotated' },
  });
  const second = other.response.headers.get('etag')!;
  assert.notEqual(second, first);
  const before = await listOf(app);

  // The first editor's writes, based on what they read, are all refused, and change nothing.
  const stale = { 'if-match': first };
  const attempts = [
    await api.PUT('/api/apps/{id}/env', {
      params: { path: { id: app } },
      body: { items: [{ key: 'A', value: 'two', secret: false }] },
      headers: stale,
    }),
    await api.PUT('/api/apps/{id}/env/{key}', { ...at(app, 'A'), body: { value: 'two' }, headers: stale }),
    await api.PUT('/api/apps/{id}/env/{key}', { ...at(app, 'NEW'), body: { value: 'x' }, headers: stale }),
    await api.DELETE('/api/apps/{id}/env/{key}', { ...at(app, 'S'), headers: stale }),
    await api.PUT('/api/apps/{id}/env/{key}', {
      ...at(app, 'A'),
      body: { value: 'two' },
      headers: { 'if-match': `W/${second}` },
    }),
  ];
  for (const r of attempts) {
    assert.equal(r.response.status, 412, JSON.stringify(r.error));
    assert.equal(r.error!.code, 'precondition_failed');
  }
  assert.deepEqual(await listOf(app), before);
  assert.equal(await tagOf(app), second);
  await stepUp(api);
  assert.equal(
    (await api.GET('/api/apps/{id}/env/{key}/reveal', at(app, 'S'))).data!.value,
    secret + '-rotated',
  );

  // With the current tag (alone, in a list, or `*`) the write goes through and answers the next tag.
  const ok = await api.PUT('/api/apps/{id}/env/{key}', {
    ...at(app, 'A'),
    body: { value: 'two' },
    headers: { 'if-match': `"nope", ${second}` },
  });
  assert.equal(ok.response.status, 200, JSON.stringify(ok.error));
  const third = ok.response.headers.get('etag')!;
  assert.notEqual(third, second);
  const star = await api.DELETE('/api/apps/{id}/env/{key}', {
    ...at(app, 'A'),
    headers: { 'if-match': '*' },
  });
  assert.equal(star.response.status, 204, JSON.stringify(star.error));
  assert.equal(star.response.headers.get('etag'), await tagOf(app));
});

test('If-Match is checked and applied atomically: of concurrent writes based on one tag, exactly one lands', async () => {
  const app = await imageApp(api);
  const base = await api.PUT('/api/apps/{id}/env', {
    params: { path: { id: app } },
    body: { items: [{ key: 'BASE', value: '0', secret: false }] },
  });
  const tag = base.response.headers.get('etag')!;
  const n = 12;
  const writes = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      i % 2
        ? api.PUT('/api/apps/{id}/env/{key}', {
            ...at(app, `K${i}`),
            body: { value: String(i), secret: false },
            headers: { 'if-match': tag },
          })
        : api.PUT('/api/apps/{id}/env', {
            params: { path: { id: app } },
            body: {
              items: [
                { key: 'BASE', value: '0', secret: false },
                { key: `K${i}`, value: String(i), secret: false },
              ],
            },
            headers: { 'if-match': tag },
          }),
    ),
  );
  const statuses = writes.map((w) => w.response.status);
  assert.equal(statuses.filter((x) => x === 412).length, n - 1, statuses.join(','));
  assert.equal(statuses.filter((x) => x === 200 || x === 201).length, 1, statuses.join(','));
  const keys = (await listOf(app)).map((i) => i.key);
  assert.equal(keys.length, 2, `only the winner's change is there: ${keys.join(',')}`);

  // Over HTTP the requests' arrival spreads them out; started in one tick, the routes' own
  // functions meet exactly in the window a check outside the write would leave open.
  const now = (await tagOf(app))!;
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
