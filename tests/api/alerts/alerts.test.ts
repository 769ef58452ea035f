// Alert rules over the API with the typed client: the default rules, checked input, the state and
// history, one notification per move to a real HTTPS receiver through a webhook channel (signed),
// rules on apps out of a caller's reach hidden, audit and revert; and the resource history route.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { adminClient, type Client } from '../../_support/server.js';
import { startReceiver, receiverResolve, type Receiver } from '../../_support/receiver.js';
import { people, twoApps } from '../../_support/people.js';
import type { SvcClient } from '../../../client/index.js';
import { addResourceSamples } from '#lib/series/resource-store.js';

let s: TestApp;
let api: SvcClient;
let owner: Client;
let recv: Receiver;
let appA: string;
let appB: string;
let channel: { id: string; secret: string };
let disk = 50;

before(async () => {
  recv = await startReceiver();
  s = await startTestApp({ SVC_NOTIFY_ALLOW: '127.0.0.1' });
  Object.assign(s.env.notifier.transport, { agent: recv.agent, resolve: receiverResolve });
  s.env.notifier.backoffMs = [20, 40];
  // The host's vitals as the sampler would read them (the disk filling up is the test's to decide).
  s.env.vitals.latest = () => ({
    at: s.env.now(),
    cpu_percent: 3,
    mem_used_bytes: 1,
    mem_total_bytes: 4,
    disk_used_bytes: disk,
    disk_total_bytes: 100,
    load1: 0,
  });
  owner = await adminClient(s);
  [appA, appB] = await twoApps(owner);
  api = await typedClient(s);
  const made = await api.POST('/api/settings/notifications', {
    body: {
      kind: 'webhook',
      name: 'alerts hook',
      url: recv.url('/alerts'),
      events: ['alert_fired', 'alert_resolved'],
    },
  });
  assert.equal(made.response.status, 201);
  channel = { id: made.data!.channel.id, secret: made.data!.secret! };
});
after(async () => {
  await s?.stop();
  await recv?.close();
});

const evaluate = async () => {
  await s.env.alerts.evaluator.evaluate();
  await s.env.alerts.outbox.idle();
};

test('a new instance lists its default rules; bad rules are a 400 naming the field', async () => {
  const list = await api.GET('/api/alerts');
  assert.equal(list.response.status, 200);
  assert.deepEqual(list.data!.items.map((r) => r.metric).sort(), [
    'backup_age_schedules',
    'certificate_days_left',
    'disk_percent',
  ]);
  assert.ok(list.data!.items.every((r) => r.state === 'ok' && r.app_id === null));
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ name: 'x', metric: 'disk_percent', op: '>', threshold: 1, app_id: appA }, /host only/],
    [{ name: 'x', metric: 'cpu_percent', op: '>=', threshold: 1 }, /op/],
    [{ name: 'x', metric: 'load', op: '>', threshold: 1 }, /metric/],
    [
      { name: 'x', metric: 'cpu_percent', op: '>', threshold: 1, channels: ['nope'] },
      /No notification channel/,
    ],
    [{ name: 'x', metric: 'cpu_percent', op: '>', threshold: 1, for_s: -1 }, /for_s/],
  ];
  for (const [body, why] of cases) {
    const r = await api.POST('/api/alerts', { body: body as never });
    assert.equal(r.response.status, 400, JSON.stringify(body));
    assert.match(JSON.stringify(r.error), why);
  }
});

test('a rule fires once, stays quiet while firing, resolves once: signed notifications on its channel', async () => {
  const made = await api.POST('/api/alerts', {
    body: {
      name: 'Disk almost full',
      metric: 'disk_percent',
      op: '>',
      threshold: 80,
      for_s: 0,
      channels: [channel.id],
    },
  });
  assert.equal(made.response.status, 201);
  const rule = made.data!.alert;
  assert.deepEqual([rule.state, rule.for_s, rule.channels], ['ok', 0, [channel.id]]);
  const mine = () =>
    recv.received.filter((r) => r.path === '/alerts' && r.json?.title?.includes('Disk almost full'));
  disk = 95;
  await evaluate();
  await evaluate();
  await evaluate();
  assert.equal(mine().length, 1, 'one notification when it fires');
  const fired = mine()[0]!;
  assert.equal(fired.json.event, 'alert_fired');
  assert.match(fired.json.text, /disk_percent is 95/);
  const expected = `sha256=${createHmac('sha256', channel.secret).update(fired.body).digest('hex')}`;
  assert.equal(fired.headers['x-svc-signature'], expected, 'signed with the secret shown once');
  const state = await api.GET('/api/alerts/{id}', { params: { path: { id: rule.id } } });
  assert.equal(state.data!.state, 'firing');
  assert.equal(state.data!.value, 95);
  disk = 40;
  await evaluate();
  await evaluate();
  assert.deepEqual(
    mine().map((r) => r.json.event),
    ['alert_fired', 'alert_resolved'],
  );
  const history = await api.GET('/api/alerts/events', { params: { query: { rule_id: rule.id } } });
  assert.deepEqual(
    history.data!.items.map((e) => [e.kind, e.notified]),
    [
      ['resolved', true],
      ['fired', true],
    ],
  );
});

test('the default disk rule fires once the disk stayed over 90% for its 5 minutes', async () => {
  const realNow = s.env.now;
  let t = Date.now();
  s.env.now = () => t;
  try {
    disk = 97;
    const defaults = () => recv.received.filter((r) => r.json?.title === 'Alert: Disk over 90%');
    await evaluate();
    t += 299_000;
    await evaluate();
    assert.equal(defaults().length, 0, 'not before 300 s');
    t += 2_000;
    await evaluate();
    await evaluate();
    assert.equal(defaults().length, 1);
    disk = 10;
    await evaluate();
  } finally {
    s.env.now = realNow;
  }
});

test('a caller limited to app A: rules and history of app B are absent', async () => {
  const ruleB = await api.POST('/api/alerts', {
    body: { name: 'B cpu', app_id: appB, metric: 'cpu_percent', op: '>', threshold: 90 },
  });
  const ruleA = await api.POST('/api/alerts', {
    body: { name: 'A cpu', app_id: appA, metric: 'cpu_percent', op: '>', threshold: 90 },
  });
  assert.equal(ruleB.response.status, 201);
  const team = people(s);
  const viewer = await team.operator('alert-viewer', 'viewer', [appA]);
  const seen = (await viewer.client.req('GET', '/api/alerts')).body.items.map((r: any) => r.name);
  assert.ok(seen.includes('A cpu') && seen.includes('Disk over 90%'));
  assert.ok(!seen.includes('B cpu'));
  assert.equal((await viewer.client.req('GET', `/api/alerts/${ruleB.data!.alert.id}`)).status, 404);
  assert.equal((await viewer.client.req('GET', `/api/alerts/${ruleA.data!.alert.id}`)).status, 200);
  assert.equal(
    (
      await viewer.client.req('POST', '/api/alerts', {
        name: 'x',
        metric: 'cpu_percent',
        op: '>',
        threshold: 1,
      })
    ).status,
    403,
  );
});

test('rules are audited and revertible: a change put back, a deletion undone under the same id', async () => {
  const made = await api.POST('/api/alerts', {
    body: { name: 'p95', metric: 'p95_latency_ms', op: '>', threshold: 500, for_s: 120 },
  });
  const id = made.data!.alert.id;
  const patched = await api.PATCH('/api/alerts/{id}', {
    params: { path: { id } },
    body: { threshold: 900, enabled: false },
  });
  assert.deepEqual([patched.data!.threshold, patched.data!.enabled], [900, false]);
  const entries = await owner.req('GET', `/api/audit?action=${encodeURIComponent('PATCH /api/alerts/{id}')}`);
  const entry = entries.body.items.find((e: any) => e.target.id === id);
  assert.equal(entry.revertible, true);
  assert.equal(entry.target.type, 'alert_rule');
  const diff = await owner.req('GET', `/api/audit/${entry.id}/diff`);
  assert.deepEqual(
    diff.body.rows
      .filter((r: any) => r.status === 'changed')
      .map((r: any) => [r.field, r.before, r.after])
      .sort(),
    [
      ['enabled', true, false],
      ['threshold', 500, 900],
    ],
  );
  assert.equal((await owner.req('POST', `/api/audit/${entry.id}/revert`)).status, 200);
  const back = await api.GET('/api/alerts/{id}', { params: { path: { id } } });
  assert.deepEqual([back.data!.threshold, back.data!.enabled], [500, true]);
  assert.equal((await api.DELETE('/api/alerts/{id}', { params: { path: { id } } })).response.status, 204);
  assert.equal((await api.GET('/api/alerts/{id}', { params: { path: { id } } })).response.status, 404);
  const del = (await owner.req('GET', `/api/audit?action=${encodeURIComponent('DELETE /api/alerts/{id}')}`))
    .body.items[0];
  assert.equal((await owner.req('POST', `/api/audit/${del.id}/revert`)).status, 200);
  const again = await api.GET('/api/alerts/{id}', { params: { path: { id } } });
  assert.equal(again.data!.name, 'p95');
});

test("an app's resource history: one-minute rows over a window, per service, checked query", async () => {
  const t0 = Math.floor(s.env.now() / 60_000) * 60_000 - 10 * 60_000;
  addResourceSamples(s.env.db, [
    {
      appId: appA,
      service: 'web',
      at: t0 + 1000,
      cpuPercent: 40,
      memoryBytes: 100,
      memoryLimitBytes: 1000,
      restarts: 0,
    },
    {
      appId: appA,
      service: 'web',
      at: t0 + 11_000,
      cpuPercent: 60,
      memoryBytes: 300,
      memoryLimitBytes: 1000,
      restarts: 1,
    },
    {
      appId: appA,
      service: 'db',
      at: t0 + 2000,
      cpuPercent: 5,
      memoryBytes: 50,
      memoryLimitBytes: 500,
      restarts: 0,
    },
  ]);
  const r = await api.GET('/api/apps/{id}/metrics/resources', { params: { path: { id: appA } } });
  assert.equal(r.response.status, 200);
  assert.deepEqual(
    r.data!.items.map((i) => [i.service, i.cpu_percent, i.memory_bytes, i.memory_limit_bytes, i.restarts]),
    [
      ['db', 5, 50, 500, 0],
      ['web', 50, 200, 1000, 1],
    ],
  );
  assert.equal(r.data!.items[0]!.at, new Date(t0).toISOString());
  const one = await api.GET('/api/apps/{id}/metrics/resources', {
    params: { path: { id: appA }, query: { service: 'db', range: '6h' } },
  });
  assert.deepEqual(
    one.data!.items.map((i) => i.service),
    ['db'],
  );
  const bad = await api.GET('/api/apps/{id}/metrics/resources', {
    params: { path: { id: appA }, query: { step: 45 } },
  });
  assert.equal(bad.response.status, 400);
  assert.equal(
    (await api.GET('/api/apps/{id}/metrics/resources', { params: { path: { id: appB } } })).data!.items
      .length,
    0,
  );
});
