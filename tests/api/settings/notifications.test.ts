// Notification channels over the real HTTP API, delivering to a local HTTPS receiver (its CA is
// trusted through an injected agent; 127.0.0.1 is exempted with SVC_NOTIFY_ALLOW, as a
// self-hosted chat server would be). Events come from their owners through the bus.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { startReceiver, RECEIVER_HOST, type Receiver } from '../../_support/receiver.js';
import { needDocker } from '../../_support/docker.js';
import { poll } from '../../_support/wait.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';

let s: TestApp;
let c: Client;
let recv: Receiver;
const names = new Map<string, string>([
  [RECEIVER_HOST, '127.0.0.1'],
  ['loop.test', '127.0.0.2'],
  ['flip.test', '8.8.8.8'],
]);
const resolve = async (host: string): Promise<ResolvedAddress[]> => {
  const a = names.get(host);
  if (!a) throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
  return [{ address: a, family: 4 }];
};

before(async () => {
  recv = await startReceiver();
  s = await startTestApp(
    { SVC_NOTIFY_ALLOW: '127.0.0.1', SVC_SECURITY_COOLDOWN: '600', SVC_BASE_DOMAIN: 'paas.example.com' },
    { background: true },
  );
  Object.assign(s.env.notifier.transport, { agent: recv.agent, resolve });
  s.env.notifier.backoffMs = [50, 100];
  c = await adminClient(s);
});
after(async () => {
  await s?.stop();
  await recv?.close();
});

const byPath = (p: string) => recv.received.filter((r) => r.path === p);

test('bad URLs are a 400 naming the reason at save time; nothing is stored', async () => {
  const cases: Array<[string, RegExp]> = [
    ['http://hooks.example.com/x', /https/],
    ['https://10.0.0.1/hook', /private/],
    ['https://169.254.169.254/latest', /link-local/],
    ['https://[::ffff:127.0.0.3]/hook', /loopback/],
    ['https://loop.test/hook', /loop\.test resolves to 127\.0\.0\.2 is a loopback/],
  ];
  for (const [url, why] of cases) {
    const r = await c.req('POST', '/api/settings/notifications', { kind: 'discord', name: 'bad', url });
    assert.equal(r.status, 400, url);
    assert.equal(r.body.code, 'bad_request');
    assert.match(r.body.error, why, url);
  }
  const bad = await c.req('POST', '/api/settings/notifications', {
    kind: 'teams',
    name: 'x',
    url: recv.url(),
  });
  assert.equal(bad.status, 400);
  const list = await c.req('GET', '/api/settings/notifications');
  assert.deepEqual(list.body.items, []);
  assert.ok(list.body.events.includes('deploy_failed') && list.body.events.includes('control_plane_started'));
});

let discord: any;
let slack: any;

test('CRUD: the URL is sealed and never returned, only a hint; test sends a real Discord payload', async () => {
  const d = await c.req('POST', '/api/settings/notifications', {
    kind: 'discord',
    name: 'ops',
    url: recv.url('/discord/secret-token-abcd'),
  });
  assert.equal(d.status, 201, d.text);
  // Wrapped like every other creation ({"app": ...}, {"domain": ...}).
  assert.deepEqual(Object.keys(d.body), ['channel']);
  discord = d.body.channel;
  assert.equal(discord.url_hint, `${RECEIVER_HOST}:${recv.port}/…abcd`);
  assert.equal(discord.enabled, true);
  assert.equal(discord.last_delivery, null);
  assert.ok(!d.text.includes('secret-token'));
  const sl = await c.req('POST', '/api/settings/notifications', {
    kind: 'slack',
    name: 'team',
    url: recv.url('/slack/secret-token-wxyz'),
    events: ['deploy_failed', 'app_crashed'],
  });
  assert.equal(sl.status, 201);
  slack = sl.body.channel;
  const list = await c.req('GET', '/api/settings/notifications');
  assert.equal(list.body.items.length, 2);
  assert.ok(!list.text.includes('secret-token'));
  const row = await s.env.db
    .selectFrom('notification_channels')
    .select('url_sealed')
    .where('id', '=', discord.id)
    .executeTakeFirstOrThrow();
  assert.ok(!row.url_sealed.includes('secret-token') && !row.url_sealed.includes(RECEIVER_HOST));

  recv.script = [204];
  const t = await c.req('POST', `/api/settings/notifications/${discord.id}/test`);
  assert.equal(t.status, 200, t.text);
  assert.deepEqual(t.body, { ok: true, status: 204 });
  const got = byPath('/discord/secret-token-abcd').at(-1)!;
  assert.equal(got.json.embeds[0].title, 'Test notification for ops');
  assert.equal(typeof got.json.embeds[0].color, 'number');
  assert.ok(got.json.embeds[0].timestamp);
  const after = await c.req('GET', `/api/settings/notifications/${discord.id}`);
  assert.equal(after.body.last_delivery.ok, true);
  assert.equal(after.body.last_delivery.status, 204);

  const p = await c.req('PATCH', `/api/settings/notifications/${slack.id}`, {
    name: 'team-alerts',
    url: 'https://10.1.1.1/x',
  });
  assert.equal(p.status, 400, 'a refused URL leaves the channel as it was');
  assert.equal((await c.req('GET', `/api/settings/notifications/${slack.id}`)).body.name, 'team');
});

test('events reach subscribed channels in each format; failures retry 3 times with the log kept', async () => {
  recv.script = [204];
  const before = recv.received.length;
  s.env.bus.publish('deployments', {
    type: 'deploy_failed',
    deployment_id: 'd1',
    app_id: 'a1',
    app: 'shop',
    trigger: 'push',
    ref: 'main',
    error: 'build failed: <oops> & more',
  });
  await poll('two deliveries', () => recv.received.length >= before + 2, 15_000, 20);
  await s.env.notifier.idle();
  const dj = byPath('/discord/secret-token-abcd').at(-1)!.json;
  assert.equal(dj.embeds[0].title, 'Deployment of shop failed');
  assert.equal(dj.embeds[0].url, 'https://svc.paas.example.com/apps/a1');
  assert.equal(dj.embeds[0].color, 0xd64541);
  assert.ok(dj.embeds[0].fields.some((f: any) => f.name === 'App' && f.value === 'shop'));
  const sj = byPath('/slack/secret-token-wxyz').at(-1)!.json;
  assert.match(sj.text, /Deployment of shop failed/);
  assert.equal(sj.blocks[0].type, 'header');
  assert.ok(JSON.stringify(sj.blocks).includes('&lt;oops&gt; &amp; more'), 'mrkdwn is escaped');
  assert.ok(JSON.stringify(sj.blocks).includes('<https://svc.paas.example.com/apps/a1|Open in svc>'));

  // The Slack channel is not subscribed to deploy_succeeded.
  const n = byPath('/slack/secret-token-wxyz').length;
  s.env.bus.publish('deployments', {
    type: 'deploy_succeeded',
    deployment_id: 'd2',
    app_id: 'a1',
    app: 'shop',
  });
  await poll(
    'the discord delivery',
    () => byPath('/discord/secret-token-abcd').some((r) => r.json?.embeds?.[0]?.title === 'Deployed shop'),
    15_000,
    20,
  );
  await s.env.notifier.idle();
  assert.equal(byPath('/slack/secret-token-wxyz').length, n);

  // 500, 500, then 204: delivered on the third attempt.
  await c.req('PATCH', `/api/settings/notifications/${slack.id}`, { enabled: false });
  const base = recv.received.length;
  recv.script = [...Array(base).fill(204), 500, 500, 204];
  s.env.bus.publish('instance', { type: 'control_plane_started', version: '9.9.9' });
  await poll('three attempts', () => recv.received.length >= base + 3, 15_000, 20);
  await s.env.notifier.idle();
  let log = await c.req('GET', `/api/settings/notifications/${discord.id}/deliveries`);
  assert.equal(log.body.items[0].event, 'control_plane_started');
  assert.equal(log.body.items[0].ok, true);
  assert.equal(log.body.items[0].attempts, 3);

  // Always 500: three attempts, then a failed delivery with the reason.
  const base2 = recv.received.length;
  recv.script = [...Array(base2).fill(204), 500];
  s.env.bus.publish('instance', { type: 'control_plane_started', version: '9.9.9' });
  await poll('three attempts', () => recv.received.length >= base2 + 3, 15_000, 20);
  await s.env.notifier.idle();
  assert.equal(recv.received.length, base2 + 3, 'no fourth attempt');
  log = await c.req('GET', `/api/settings/notifications/${discord.id}/deliveries`);
  assert.equal(log.body.items[0].ok, false);
  assert.equal(log.body.items[0].attempts, 3);
  assert.match(log.body.items[0].error, /500/);
  const ch = await c.req('GET', `/api/settings/notifications/${discord.id}`);
  assert.equal(ch.body.last_delivery.ok, false);
  assert.equal(ch.body.last_delivery.status, 500);
  recv.script = [204];
});

test('traffic_anomaly is debounced per (IP, kind); allow-listed anomalies are never sent', async () => {
  recv.script = [204];
  const anomalies = () =>
    byPath('/discord/secret-token-abcd').filter(
      (r) => r.json?.embeds?.[0]?.footer?.text === 'traffic_anomaly',
    );
  const start = anomalies().length;
  const spike = {
    type: 'traffic_anomaly',
    ip: '203.0.113.50',
    kind: 'request_spike',
    count: 999,
    detail: 'spike',
    notified: true,
  };
  s.env.bus.publish('security', spike);
  s.env.bus.publish('security', spike);
  s.env.bus.publish('security', { ...spike, kind: 'error_surge' });
  s.env.bus.publish('security', { ...spike, ip: '203.0.113.51' });
  s.env.bus.publish('security', { ...spike, ip: '203.0.113.99', notified: false });
  await poll('three anomaly deliveries', () => anomalies().length >= start + 3, 15_000, 20);
  await s.env.notifier.idle();
  const got = anomalies()
    .slice(start)
    .map((r) => r.json.embeds[0].fields.map((f: any) => `${f.name}=${f.value}`).join(','));
  assert.equal(got.length, 3, got.join(' | '));
  assert.ok(!got.some((g) => g.includes('203.0.113.99')));
});

test('a URL that passed at save but resolves to loopback at send is refused: 400 at test, failed delivery otherwise', async () => {
  names.set('flip.test', '8.8.8.8');
  const r = await c.req('POST', '/api/settings/notifications', {
    kind: 'slack',
    name: 'flip',
    url: 'https://flip.test/hook',
    events: ['deploy_failed'],
  });
  assert.equal(r.status, 201);
  names.set('flip.test', '127.0.0.2');
  const t = await c.req('POST', `/api/settings/notifications/${r.body.channel.id}/test`);
  assert.equal(t.status, 400);
  assert.match(t.body.error, /loopback/);
  const ch = await c.req('GET', `/api/settings/notifications/${r.body.channel.id}`);
  assert.equal(ch.body.last_delivery.ok, false);
  assert.match(ch.body.last_delivery.error, /refused/);
  assert.equal((await c.req('DELETE', `/api/settings/notifications/${r.body.channel.id}`)).status, 204);
  assert.equal((await c.req('GET', `/api/settings/notifications/${r.body.channel.id}`)).status, 404);
});

test('deploy_failed from a real failing deployment reaches the channel', async (t) => {
  if (!(await needDocker(t))) return;
  recv.script = [204];
  const app = await c.req('POST', '/api/apps', {
    name: `w14-notify-${process.pid}`,
    source: { type: 'image', image: 'svc-test/w14-no-such-image:missing' },
  });
  assert.equal(app.status, 201, app.text);
  const created = app.body.app;
  try {
    const d = await c.req('POST', `/api/apps/${created.id}/deployments`, {});
    assert.equal(d.status, 202, d.text);
    const hit = await poll(
      'deploy_failed at the receiver',
      () =>
        byPath('/discord/secret-token-abcd').find(
          (r) =>
            r.json?.embeds?.[0]?.footer?.text === 'deploy_failed' &&
            r.json.embeds[0].title.includes(created.name),
        ),
      120_000,
      100,
    );
    assert.match(hit.json.embeds[0].url, new RegExp(`/apps/${created.id}$`));
  } finally {
    await c.req('POST', '/api/auth/step-up', { password: 'correct horse battery staple' });
    await c.req('DELETE', `/api/apps/${created.id}`);
  }
});

test('the posture checklist lists the SVC_NOTIFY_ALLOW exemptions', async () => {
  const r = await c.req('GET', '/api/security/posture');
  const row = r.body.items.find((i: any) => i.code === 'notify_allow');
  assert.ok(row, JSON.stringify(r.body.items.map((i: any) => i.code)));
  assert.match(row.reason, /127\.0\.0\.1/);
});
