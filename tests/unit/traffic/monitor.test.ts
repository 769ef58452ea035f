import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  TrafficMonitor,
  disabledTrafficSnapshot,
  parseAllowlist,
  type Anomaly,
} from '#lib/traffic/monitor.js';
import type { AccessEntry } from '#lib/traffic/parse.js';

const T0 = Date.UTC(2024, 0, 1, 12, 0, 0);

function req(ip: string, at: number, status = 200, path = '/'): AccessEntry {
  return { at, ip, host: 'example.test', method: 'GET', path, status, bytes: 0, durationMs: 0 };
}

function monitor(opts: ConstructorParameters<typeof TrafficMonitor>[0] = {}) {
  let now = T0;
  const notified: Anomaly[] = [];
  const m = new TrafficMonitor({
    windowSeconds: 60,
    requestThreshold: 10,
    errorThreshold: 5,
    cooldownSeconds: 600,
    now: () => now,
    onAnomaly: (a) => notified.push(a),
    ...opts,
  });
  return { m, notified, setNow: (t: number) => (now = t) };
}

test('a burst straddling a bucket edge still trips (sliding, not fixed, window)', () => {
  const { m, notified } = monitor();
  // 5 requests in the last 100 ms of one second-bucket, 5 in the first 100 ms of the next:
  // each fixed bucket sees 5, the sliding minute sees 10.
  for (let i = 0; i < 5; i++) m.observe(req('192.0.2.1', T0 + 59_900 + i * 10));
  for (let i = 0; i < 5; i++) m.observe(req('192.0.2.1', T0 + 60_000 + i * 10));
  assert.equal(notified.length, 1);
  assert.equal(notified[0].kind, 'request_spike');
  assert.equal(notified[0].count, 10);
  assert.equal(notified[0].ip, '192.0.2.1');
  assert.equal(notified[0].notified, true);
  assert.equal(notified[0].window_seconds, 60);
  assert.match(notified[0].detail, /10 requests from 192\.0\.2\.1 within 60s/);
  assert.equal(notified[0].at, new Date(T0 + 60_040).toISOString());
});

test('requests spread wider than the window do not trip', () => {
  const { m, notified, setNow } = monitor();
  for (let i = 0; i < 5; i++) m.observe(req('192.0.2.2', T0 + i));
  for (let i = 0; i < 5; i++) m.observe(req('192.0.2.2', T0 + 61_000 + i));
  // 9 in any 60 s, never 10
  for (let i = 0; i < 4; i++) m.observe(req('192.0.2.2', T0 + 62_000 + i));
  assert.equal(notified.length, 0);
  setNow(T0 + 62_500);
  const snap = m.snapshot();
  assert.deepEqual(
    snap.top_talkers.map((t) => [t.ip, t.requests]),
    [['192.0.2.2', 9]],
  );
  setNow(T0 + 62_000 + 60_000);
  assert.equal(m.snapshot().top_talkers.length, 0, 'the window slid past every request');
  assert.equal(m.snapshot().tracked_ips, 1);
});

test('error surge counts 4xx and 5xx only, and cooldown holds one trip per kind', () => {
  const { m, notified } = monitor({ requestThreshold: 1000 });
  for (let i = 0; i < 20; i++) m.observe(req('198.51.100.7', T0 + i * 100, i % 2 === 0 ? 404 : 200));
  for (let i = 0; i < 4; i++) m.observe(req('198.51.100.7', T0 + 3000 + i, 503));
  assert.deepEqual(
    notified.map((a) => [a.kind, a.count]),
    [['error_surge', 5]],
  );
  // Much later but inside the cooldown: no second notification even as errors keep coming.
  for (let i = 0; i < 20; i++) m.observe(req('198.51.100.7', T0 + 300_000 + i, 500));
  assert.equal(notified.length, 1);
  // After the cooldown it may trip again.
  for (let i = 0; i < 5; i++) m.observe(req('198.51.100.7', T0 + 700_000 + i, 500));
  assert.equal(notified.length, 2);
  assert.deepEqual(m.stats().anomalies, { request_spike: 0, error_surge: 2 });
});

test('allowlisted addresses are recorded but not notified', () => {
  const { m, notified } = monitor({ allowlist: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.99'] });
  for (let i = 0; i < 10; i++) m.observe(req('10.1.2.3', T0 + i));
  for (let i = 0; i < 10; i++) m.observe(req('2001:db8::5', T0 + i));
  for (let i = 0; i < 10; i++) m.observe(req('192.0.2.99', T0 + i));
  for (let i = 0; i < 10; i++) m.observe(req('192.0.2.98', T0 + i));
  assert.deepEqual(
    notified.map((a) => a.ip),
    ['192.0.2.98'],
  );
  const ring = m.snapshot().recent_anomalies;
  assert.deepEqual(
    ring.map((a) => [a.ip, a.notified]),
    [
      ['192.0.2.98', true],
      ['192.0.2.99', false],
      ['2001:db8::5', false],
      ['10.1.2.3', false],
    ],
  );
  assert.match(ring[1].detail, /allowlisted/);
  assert.throws(() => parseAllowlist(['10.0.0.0/33']), /10\.0\.0\.0\/33/);
  assert.throws(() => parseAllowlist(['example.com']), /example\.com/);
  assert.throws(() => parseAllowlist(['10.0.0.0/abc']), /prefix/);
});

test('the per-IP table is bounded and evicts the least recently seen', () => {
  const { m } = monitor({ maxIps: 3 });
  m.observe(req('192.0.2.1', T0));
  m.observe(req('192.0.2.2', T0 + 1));
  m.observe(req('192.0.2.3', T0 + 2));
  m.observe(req('192.0.2.1', T0 + 3)); // touch: .2 is now the oldest
  m.observe(req('192.0.2.4', T0 + 4));
  const ips = m
    .snapshot()
    .top_talkers.map((t) => t.ip)
    .sort();
  assert.deepEqual(ips, ['192.0.2.1', '192.0.2.3', '192.0.2.4']);
  for (let i = 0; i < 10_000; i++) m.observe(req(`10.0.${i >> 8}.${i & 255}`, T0 + 10 + i));
  assert.equal(m.snapshot().tracked_ips, 3);
  assert.equal(m.stats().tracked_ips, 3);
  // An evicted address starts from zero when it comes back.
  m.observe(req('192.0.2.2', T0 + 20_000));
  assert.equal(m.snapshot().top_talkers.find((t) => t.ip === '192.0.2.2')?.requests, 1);
});

test('snapshot: shape, ordering, rings newest first and bounded', () => {
  const { m, setNow } = monitor({ requestThreshold: 1000, errorThreshold: 1000 });
  for (let i = 0; i < 30; i++) m.observe(req(`192.0.2.${i}`, T0 + i, 200, `/p/${i}`));
  for (let i = 0; i < 5; i++) m.observe(req('192.0.2.3', T0 + 100 + i, 404));
  for (let i = 0; i < 5; i++) m.observe(req('192.0.2.4', T0 + 200 + i, 200));
  for (let i = 0; i < 200; i++) m.observe(req('192.0.2.5', T0 + 300 + i, 200, `/q/${i}`));
  setNow(T0 + 1000);
  const s = m.snapshot();
  assert.deepEqual(Object.keys(s), [
    'enabled',
    'window_seconds',
    'request_threshold',
    'error_threshold',
    'tracked_ips',
    'top_talkers',
    'recent_requests',
    'recent_anomalies',
  ]);
  assert.equal(s.enabled, true);
  assert.equal(s.tracked_ips, 30);
  assert.equal(s.top_talkers.length, 20);
  assert.deepEqual(
    s.top_talkers.slice(0, 3).map((t) => [t.ip, t.requests, t.errors]),
    [
      ['192.0.2.5', 201, 0],
      ['192.0.2.3', 6, 5],
      ['192.0.2.4', 6, 0],
    ],
  );
  assert.equal(s.top_talkers[0].last_seen, new Date(T0 + 499).toISOString());
  assert.equal(s.recent_requests.length, 100);
  assert.deepEqual(s.recent_requests[0], {
    at: new Date(T0 + 499).toISOString(),
    ip: '192.0.2.5',
    host: 'example.test',
    method: 'GET',
    path: '/q/199',
    status: 200,
  });
  assert.equal(s.recent_requests[99].path, '/q/100');

  const many = monitor({ requestThreshold: 1, cooldownSeconds: 1 }).m;
  for (let i = 0; i < 80; i++) many.observe(req(`203.0.113.${i}`, T0 + i));
  const ring = many.snapshot().recent_anomalies;
  assert.equal(ring.length, 50);
  assert.equal(ring[0].ip, '203.0.113.79');
  assert.equal(many.stats().anomalies.request_spike, 80);

  assert.deepEqual(disabledTrafficSnapshot({ windowSeconds: 30 }), {
    enabled: false,
    window_seconds: 30,
    request_threshold: 300,
    error_threshold: 100,
    tracked_ips: 0,
    top_talkers: [],
    recent_requests: [],
    recent_anomalies: [],
  });
});

test('out-of-order and long windows still count correctly', () => {
  const { m, notified } = monitor({ windowSeconds: 600, requestThreshold: 4 });
  m.observe(req('192.0.2.8', T0 + 700_000));
  m.observe(req('192.0.2.8', T0 + 10_000)); // older than the window: ignored
  m.observe(req('192.0.2.8', T0 + 400_000)); // older but inside
  m.observe(req('192.0.2.8', T0 + 710_000));
  assert.equal(notified.length, 0);
  m.observe(req('192.0.2.8', T0 + 720_000));
  assert.equal(notified.length, 1);
  assert.equal(notified[0].count, 4);
});

test('rejects zero, negative and non-integer settings by name', () => {
  assert.throws(() => new TrafficMonitor({ windowSeconds: 0 }), /windowSeconds/);
  assert.throws(() => new TrafficMonitor({ requestThreshold: -1 }), /requestThreshold/);
  assert.throws(() => new TrafficMonitor({ maxIps: Number.NaN }), /maxIps/);
  assert.throws(() => new TrafficMonitor({ cooldownSeconds: 1.5 }), /cooldownSeconds/);
});
