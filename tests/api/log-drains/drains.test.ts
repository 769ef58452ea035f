// Log drains over the API with the typed client, delivering to real receivers on loopback: plain
// HTTP JSON (the HTTPS receiver), OTLP/HTTP (the OTLP receiver), syslog over TLS (the syslog
// server). Lines enter as the collector hands them over (offer) and from the deployment and run
// log topics; the engine's own container logs are tests/engine/drains.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { adminClient, type Client } from '../../_support/server.js';
import { startReceiver, RECEIVER_HOST, type Receiver } from '../../_support/receiver.js';
import { startOtlpReceiver, OTLP_HOST, type OtlpReceiver } from '../../_support/otlp.js';
import { startSyslogServer, type SyslogServer } from '../../_support/syslog.js';
import { twoApps } from '../../_support/people.js';
import { poll } from '../../_support/wait.js';
import type { SvcClient } from '../../../client/index.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';
import type { DrainLine } from '#lib/drains/kinds/index.js';

let s: TestApp;
let api: SvcClient;
let owner: Client;
let recv: Receiver;
let otlp: OtlpReceiver;
let syslog: SyslogServer;
let appA: string;
let appB: string;

before(async () => {
  recv = await startReceiver();
  otlp = await startOtlpReceiver();
  syslog = await startSyslogServer({ tls: true });
  s = await startTestApp({ SVC_NOTIFY_ALLOW: '127.0.0.1', SVC_DRAIN_BUFFER: '100' });
  const resolve = async (h: string): Promise<ResolvedAddress[]> => {
    if ([RECEIVER_HOST, OTLP_HOST, 'syslog.test'].includes(h)) return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
  };
  // One CA bundle trusting the three receivers (each made its own throwaway CA).
  const ca = [await caOf(recv), otlp.caPem, syslog.caPem!].join('\n');
  Object.assign(s.env.drains.transport, { resolve, ca });
  s.env.drains.pipeTimings = { backoffMs: [20], lingerMs: 5 };
  await s.env.drains.start();
  owner = await adminClient(s);
  [appA, appB] = await twoApps(owner);
  api = await typedClient(s);
});
after(async () => {
  await s?.env.drains.stop();
  await s?.stop();
  await recv?.close();
  await otlp?.close();
  await syslog?.close();
});

async function caOf(r: Receiver): Promise<string> {
  const ca = (r.agent.options as { ca?: string }).ca;
  return String(ca);
}

const line = (appId: string, n: number, over: Partial<DrainLine> = {}): DrainLine => ({
  at: Date.now(),
  appId,
  app: appId === appA ? 'alpha' : 'bravo',
  service: 'web',
  container: 'alpha-web-1',
  stream: 'stdout',
  source: 'container',
  line: `line ${n}`,
  ...over,
});

test('bad drains are a 400 naming the reason; nothing is stored', async () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ name: 'x', kind: 'http_json', url: 'http://hooks.example.com/x' }, /https/],
    [{ name: 'x', kind: 'http_json', url: 'https://10.0.0.1/x' }, /private/],
    [{ name: 'x', kind: 'syslog', url: 'syslog://8.8.8.8:514' }, /cleartext/],
    [{ name: 'x', kind: 'syslog', url: `https://${RECEIVER_HOST}:1/x` }, /syslog\+tls/],
    [
      { name: 'x', kind: 'syslog', url: 'syslog+tls://syslog.test:1', headers: { A: 'b' } },
      /HTTP drains only/,
    ],
    [{ name: 'x', kind: 'http_json', url: recv.url('/d'), headers: { Host: 'evil' } }, /cannot be set/],
    [
      { name: 'x', kind: 'http_json', url: recv.url('/d'), headers: { 'X-A': 'a\r\nB: c' } },
      /cannot be sent/,
    ],
    [
      { name: 'x', kind: 'http_json', url: recv.url('/d'), app_ids: ['nope0000000000000000'] },
      /No app|app id/,
    ],
    [{ name: 'x', kind: 'http_json', url: recv.url('/d'), app_ids: [] }, /at least one app/],
    [{ name: 'x', kind: 'gelf', url: recv.url('/d') }, /kind/],
  ];
  for (const [body, why] of cases) {
    const r = await api.POST('/api/log-drains', { body: body as never });
    assert.equal(r.response.status, 400, JSON.stringify(body));
    assert.match(JSON.stringify(r.error), why, JSON.stringify(body));
  }
  assert.deepEqual((await api.GET('/api/log-drains')).data!.items, []);
});

let httpDrain: string;

test('HTTP JSON: URL and headers sealed (names only shown); a test call; lines of its app only, with their attributes', async () => {
  const made = await api.POST('/api/log-drains', {
    body: {
      name: 'json',
      kind: 'http_json',
      url: recv.url('/drain/secret-path-wxyz'),
      app_ids: [appA],
      headers: { Authorization: 'Bearer drain-token-123' },
    },
  });
  assert.equal(made.response.status, 201);
  const d = made.data!.drain;
  httpDrain = d.id;
  assert.deepEqual(
    [d.url_hint, d.header_names, d.app_ids, d.dropped, d.state],
    [`https://${RECEIVER_HOST}:${recv.port}/…wxyz`, ['Authorization'], [appA], 0, 'idle'],
  );
  const text = (await owner.req('GET', '/api/log-drains')).text;
  assert.ok(!text.includes('secret-path') && !text.includes('drain-token-123'));
  const row = await s.env.db
    .selectFrom('log_drains')
    .selectAll()
    .where('id', '=', d.id)
    .executeTakeFirstOrThrow();
  assert.ok(!row.url_sealed.includes('secret-path') && !row.headers_sealed!.includes('drain-token'));

  const t = await api.POST('/api/log-drains/{id}/test', { params: { path: { id: d.id } } });
  assert.deepEqual(t.data, { ok: true, status: 204 });
  const got = recv.received.at(-1)!;
  assert.equal(got.headers.authorization, 'Bearer drain-token-123');
  assert.match(got.json[0].message, /svc log drain test: json/);

  const before = recv.received.length;
  for (let i = 0; i < 30; i++) s.env.drains.offer(line(appA, i, { stream: i % 2 ? 'stderr' : 'stdout' }));
  for (let i = 0; i < 10; i++) s.env.drains.offer(line(appB, i));
  await poll(
    '30 lines of app A',
    () => recv.received.slice(before).flatMap((r) => r.json ?? []).length >= 30,
    10_000,
    10,
  );
  const lines = recv.received.slice(before).flatMap((r) => r.json);
  assert.equal(lines.length, 30, 'app B is not this drain’s');
  assert.deepEqual(Object.keys(lines[0]).sort(), [
    'app',
    'app_id',
    'container',
    'message',
    'service',
    'source',
    'stream',
    'time',
  ]);
  assert.deepEqual(
    [lines[1].app, lines[1].service, lines[1].container, lines[1].stream],
    ['alpha', 'web', 'alpha-web-1', 'stderr'],
  );
  await s.env.drains.flushCounts();
  const after = (await api.GET('/api/log-drains/{id}', { params: { path: { id: d.id } } })).data!;
  assert.equal(after.delivered, 30);
  assert.equal(after.last_delivery?.ok, true);
});

test('OTLP/HTTP: every app, records grouped by container with their resource attributes', async () => {
  const made = await api.POST('/api/log-drains', {
    body: { name: 'otel', kind: 'otlp_http', url: otlp.url() },
  });
  assert.equal(made.response.status, 201);
  assert.deepEqual(
    (await api.POST('/api/log-drains/{id}/test', { params: { path: { id: made.data!.drain.id } } })).data,
    { ok: true, status: 200 },
  );
  const n0 = otlp.records.length;
  s.env.drains.offer(line(appA, 1));
  s.env.drains.offer(line(appB, 2, { container: 'bravo-web-1', stream: 'stderr' }));
  await poll('two records', () => otlp.records.length >= n0 + 2, 10_000, 10);
  assert.deepEqual(otlp.rejected, []);
  const b = otlp.records.slice(n0).find((r) => r.body === 'line 2')!;
  assert.deepEqual(
    [b.resource['svc.app'], b.resource['svc.app_id'], b.resource['container.name'], b.severity],
    ['bravo', appB, 'bravo-web-1', 'ERROR'],
  );
});

test('syslog over TLS: deployment and run log lines too, as RFC 5424 with the app in structured data', async () => {
  const made = await api.POST('/api/log-drains', {
    body: { name: 'sys', kind: 'syslog', url: `syslog+tls://syslog.test:${syslog.port}`, app_ids: [appB] },
  });
  assert.equal(made.response.status, 201, JSON.stringify(made.error));
  assert.equal(made.data!.drain.url_hint, `syslog+tls://syslog.test:${syslog.port}`);
  const deployment = 'd' + appB.slice(1);
  await s.env.db
    .insertInto('deployments')
    .values({
      id: deployment,
      app_id: appB,
      status: 'succeeded',
      trigger: 'manual',
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
      waiting: 0,
    } as never)
    .execute();
  s.env.bus.publish(`build:${deployment}`, {
    seq: 1,
    at: new Date().toISOString(),
    stream: 'build',
    line: 'Step 1/3 : FROM busybox',
  });
  s.env.bus.publish('run:r1', {
    app_id: appB,
    service: 'web',
    stream: 'stdout',
    at: new Date().toISOString(),
    line: 'migrated 3 tables',
  });
  s.env.bus.publish('run:r2', { app_id: appA, stream: 'stdout', line: 'not for this drain' });
  // The app A run line is the HTTP drain's (app A), not this one's.
  await poll(
    "the HTTP drain took app A's run line",
    () =>
      recv.received.some(
        (r) =>
          Array.isArray(r.json) &&
          r.json.some((x: any) => x.message === 'not for this drain' && x.source === 'run'),
      ),
    10_000,
    10,
  );
  await poll('two syslog messages', () => syslog.messages.length >= 2, 10_000, 10);
  assert.deepEqual(syslog.errors, []);
  // The two sources are read apart, so their order is not kept.
  const dep = syslog.messages.find((m) => m.msgid === 'deployment');
  const run = syslog.messages.find((m) => m.msgid === 'run');
  assert.deepEqual(
    [dep!.app, dep!.msgid, dep!.msg, dep!.sd['svc@32473']!.container],
    ['bravo', 'deployment', 'Step 1/3 : FROM busybox', `deployment ${deployment}`],
  );
  assert.deepEqual(
    [run!.app, run!.procid, run!.msgid, run!.msg],
    ['bravo', 'web', 'run', 'migrated 3 tables'],
  );
  assert.equal(syslog.messages.length, 2);
});

test('a dead receiver: the buffer stays bounded, dropped lines are counted and shown, delivery resumes', async () => {
  // What earlier tests sent is delivered first (a run's line resolves its app asynchronously).
  const view = async () =>
    (await api.GET('/api/log-drains/{id}', { params: { path: { id: httpDrain } } })).data!;
  await poll(
    'nothing waiting',
    async () => (await view()).buffered === 0 && (await view()).state === 'idle',
    10_000,
    20,
  );
  await s.env.drains.flushCounts();
  const base = await view();
  recv.script = [503];
  const n = 1000;
  for (let i = 0; i < n; i++) s.env.drains.offer(line(appA, i));
  await poll(
    'failing',
    async () =>
      (await api.GET('/api/log-drains/{id}', { params: { path: { id: httpDrain } } })).data!.state ===
      'failing',
    10_000,
    10,
  );
  const during = (await api.GET('/api/log-drains/{id}', { params: { path: { id: httpDrain } } })).data!;
  assert.ok(during.buffered <= 100 + 100, `bounded by SVC_DRAIN_BUFFER and one batch: ${during.buffered}`);
  assert.equal(during.last_delivery?.ok, false);
  assert.match(during.last_delivery!.error!, /503/);
  recv.script = [204];
  await poll(
    'the waiting lines delivered',
    async () =>
      (await api.GET('/api/log-drains/{id}', { params: { path: { id: httpDrain } } })).data!.buffered === 0,
    10_000,
    20,
  );
  await s.env.drains.flushCounts();
  const after = (await api.GET('/api/log-drains/{id}', { params: { path: { id: httpDrain } } })).data!;
  assert.ok(after.dropped - base.dropped >= n - 200, `dropped ${after.dropped}`);
  assert.equal(
    after.delivered - base.delivered + after.dropped - base.dropped,
    n,
    'every line delivered or counted as dropped',
  );
  assert.equal(after.state, 'idle');
});

test('drains are audited and revertible: a deletion undone brings the same URL and headers back', async () => {
  assert.equal(
    (await api.DELETE('/api/log-drains/{id}', { params: { path: { id: httpDrain } } })).response.status,
    204,
  );
  const entry = (
    await owner.req('GET', `/api/audit?action=${encodeURIComponent('DELETE /api/log-drains/{id}')}`)
  ).body.items[0];
  assert.equal(entry.revertible, true);
  const diff = await owner.req('GET', `/api/audit/${entry.id}/diff`);
  assert.ok(diff.body.rows.some((r: any) => r.field === 'headers' && r.masked === true));
  assert.ok(!diff.text.includes('drain-token-123'));
  assert.equal((await owner.req('POST', `/api/audit/${entry.id}/revert`)).status, 200);
  const back = await api.GET('/api/log-drains/{id}', { params: { path: { id: httpDrain } } });
  assert.equal(back.response.status, 200);
  await api.POST('/api/log-drains/{id}/test', { params: { path: { id: httpDrain } } });
  assert.equal(recv.received.at(-1)!.headers.authorization, 'Bearer drain-token-123');
  const off = await api.PATCH('/api/log-drains/{id}', {
    params: { path: { id: httpDrain } },
    body: { enabled: false },
  });
  assert.equal(off.data!.state, 'disabled');
});
