// Request metrics and host vitals: exact roll-ups, bounded rows over 90 days of a fake clock,
// the contract's query shape, attribution by host. A real (in-memory) SQLite database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BOUNDS_MS,
  bucketOf,
  newHistogram,
  addInto,
  quantile,
  encode,
  addEncoded,
} from '#lib/util/histogram.js';
import { RequestSeries, hostKey } from '#lib/series/requests.js';
import { queryRequests, queryHost, parseRange, RANGES, RANGE_NAMES } from '#lib/series/query.js';
import {
  addVitalsSample,
  pruneSeries,
  MAX_ROWS_PER_SERIES,
  RESOLUTIONS,
  RETENTION,
} from '#lib/series/store.js';
import { parseMeminfo, parseProcStat, VitalsSampler } from '#lib/series/vitals.js';
import { parseAccessLine } from '#lib/traffic/parse.js';
import type { AccessEntry } from '#lib/traffic/parse.js';
import { HttpError } from '#lib/http/errors.js';
import { memoryEnv } from '../_support/env.js';
import { migrations } from '#lib/db/migrations/index.js';
import { registerStreams } from '#lib/deploy/streams.js';
import { poll } from '../_support/wait.js';
import { tmpdir } from 'node:os';

const T0 = Date.parse('2030-06-01T00:00:00.000Z');

function entry(at: number, host: string, status = 200, durationMs = 5, bytes = 100): AccessEntry {
  return { at, ip: '198.51.100.1', host, method: 'GET', path: '/', status, bytes, durationMs };
}

async function rig(now: () => number) {
  const env = await memoryEnv();
  const series = new RequestSeries({
    db: env.db,
    now,
    attribution: async () =>
      new Map([
        ['shop.example.com', { appId: 'A1', service: 'web' }],
        ['api.shop.example.com', { appId: 'A1', service: 'api' }],
        ['blog.example.com', { appId: 'A2', service: 'web' }],
      ]),
  });
  await series.refreshAttribution();
  return { env, series };
}

const total = (a: { points: Array<{ requests: number }> }) => a.points.reduce((n, p) => n + p.requests, 0);

test('histograms merge exactly: percentiles of merged parts are those of the whole', () => {
  const rand = (() => {
    let s = 7;
    return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  })();
  const whole = newHistogram();
  const parts = [newHistogram(), newHistogram(), newHistogram()];
  for (let i = 0; i < 10_000; i++) {
    const ms = rand() < 0.9 ? rand() * 40 : 200 + rand() * 2000;
    const b = bucketOf(ms);
    whole[b]!++;
    parts[i % 3]![b]!++;
  }
  const merged = newHistogram();
  for (const p of parts) addEncoded(merged, encode(p));
  assert.deepEqual([...merged], [...whole]);
  for (const q of [0.5, 0.95, 0.99]) assert.equal(quantile(merged, q), quantile(whole, q));
  const again = newHistogram();
  addInto(again, whole);
  assert.deepEqual([...again], [...whole]);
  // Known shapes.
  const h = newHistogram();
  for (let i = 0; i < 100; i++) h[bucketOf(i < 90 ? 4 : 120)]!++;
  assert.ok(quantile(h, 0.5) > 3 && quantile(h, 0.5) <= 5);
  assert.ok(quantile(h, 0.95) > 100 && quantile(h, 0.95) <= 150);
  assert.equal(quantile(newHistogram(), 0.5), 0);
  const slow = newHistogram();
  slow[bucketOf(1e9)]!++;
  assert.equal(quantile(slow, 0.99), BOUNDS_MS.at(-1));
  assert.equal(bucketOf(0), 0);
  assert.equal(bucketOf(1), 0);
  assert.equal(bucketOf(1.0001), 1);
});

test('requests are attributed by host (port, case and trailing dot ignored); unknown hosts count host-wide only', async () => {
  const now = T0 + 60_000;
  const { env, series } = await rig(() => now);
  assert.equal(hostKey('Shop.Example.COM:8443'), 'shop.example.com');
  assert.equal(hostKey('shop.example.com.'), 'shop.example.com');
  assert.equal(hostKey('[2001:db8::1]:443'), '2001:db8::1');
  const at = T0 + 5_000;
  series.observe(entry(at, 'shop.example.com', 200, 3, 1000));
  series.observe(entry(at, 'SHOP.example.com:443', 404, 3, 10));
  series.observe(entry(at, 'shop.example.com.', 503, 3, 0));
  series.observe(entry(at, 'api.shop.example.com', 200, 250, 5));
  series.observe(entry(at, 'blog.example.com', 200, 3, 1));
  series.observe(entry(at, 'evil.example.net', 200, 3, 7));
  series.observe(entry(at, '203.0.113.9', 400, 3, 7));
  series.flush(true);
  const shop = queryRequests(env.db, { appId: 'A1', range: '1h', now });
  const busy = shop.points.filter((p) => p.requests > 0);
  assert.equal(busy.length, 1);
  assert.deepEqual(
    { ...busy[0], p50_ms: undefined, p95_ms: undefined, p99_ms: undefined },
    {
      t: new Date(T0).toISOString(),
      requests: 4,
      errors_4xx: 1,
      errors_5xx: 1,
      bytes_out: 1015,
      p50_ms: undefined,
      p95_ms: undefined,
      p99_ms: undefined,
    },
  );
  assert.ok(busy[0]!.p99_ms > 200 && busy[0]!.p99_ms <= 300, `p99 ${busy[0]!.p99_ms}`);
  assert.equal(total(queryRequests(env.db, { appId: 'A1', service: 'web', range: '1h', now })), 3);
  assert.equal(total(queryRequests(env.db, { appId: 'A1', service: 'api', range: '1h', now })), 1);
  assert.equal(total(queryRequests(env.db, { appId: 'A2', range: '1h', now })), 1);
  const host = queryHost(env.db, { range: '1h', now });
  assert.equal(total(host), 7, 'every request counts host-wide, unknown hosts included');
  assert.equal(
    host.points.reduce((n, p) => n + p.errors_4xx, 0),
    2,
  );
  assert.equal(total(queryRequests(env.db, { appId: 'nope', range: '1h', now })), 0);
});

test('the shape: each range zero-filled, oldest first, aligned to its step, at most 500 points; unknown ranges are 400', async () => {
  const now = T0 + 12_345_678;
  const { env } = await rig(() => now);
  for (const name of RANGE_NAMES) {
    const a = queryRequests(env.db, { appId: 'A1', range: name, now });
    const r = RANGES[name];
    assert.equal(a.range, name);
    assert.equal(a.step_seconds, r.step);
    assert.equal(a.points.length, r.seconds / r.step);
    assert.ok(a.points.length <= 500);
    for (let i = 0; i < a.points.length; i++) {
      const t = Date.parse(a.points[i]!.t) / 1000;
      assert.equal(t % r.step, 0);
      if (i > 0) assert.equal(t - Date.parse(a.points[i - 1]!.t) / 1000, r.step);
    }
    const last = Date.parse(a.points.at(-1)!.t);
    assert.ok(last <= now && now < last + r.step * 1000, 'the last point holds now');
    assert.deepEqual(Object.keys(a.points[0]!).sort(), [
      'bytes_out',
      'errors_4xx',
      'errors_5xx',
      'p50_ms',
      'p95_ms',
      'p99_ms',
      'requests',
      't',
    ]);
    const h = queryHost(env.db, { range: name, now });
    // No sample in this window: no vitals at all, never a run of zeros.
    assert.deepEqual(h.vitals, []);
    assert.equal(h.points.length, r.seconds / r.step);
  }
  assert.equal(parseRange(undefined), '1h');
  for (const bad of ['2h', '1H', 'all', '__proto__', 'toString', 5]) {
    assert.throws(
      () => parseRange(bad),
      (e: unknown) => e instanceof HttpError && e.status === 400 && /1h, 6h, 24h, 7d, 30d/.test(e.message),
    );
  }
});

test('roll-up is exact: every resolution holds the same counts and percentiles', async () => {
  let now = T0;
  const { env, series } = await rig(() => now);
  // Two hours of traffic at varying latency, 3 requests every 10 s.
  for (let s = 0; s < 7200; s += 10) {
    for (let k = 0; k < 3; k++)
      series.observe(
        entry(T0 + s * 1000 + k, 'shop.example.com', k === 2 && s % 600 === 0 ? 500 : 200, (s % 97) + k * 40),
      );
    now = T0 + s * 1000;
    if (s % 60 === 0) series.flush();
  }
  now = T0 + 7200_000;
  series.flush(true);
  const fine = queryRequests(env.db, { appId: 'A1', range: '6h', now });
  const coarse = queryRequests(env.db, { appId: 'A1', range: '7d', now });
  const month = queryRequests(env.db, { appId: 'A1', range: '30d', now });
  assert.equal(total(fine), 2160);
  assert.equal(total(coarse), 2160);
  assert.equal(total(month), 2160);
  const hours = coarse.points.filter((p) => p.requests > 0);
  assert.equal(hours.length, 2);
  // The hour rows' percentiles equal those of the hour's 1-minute rows merged.
  const raw = env.db
    .selectFrom('request_series')
    .selectAll()
    .where('res', '=', 60)
    .where('app_id', '=', 'A1');
  const minutes = await raw.execute();
  for (const hour of hours) {
    const start = Date.parse(hour.t) / 1000;
    const h = newHistogram();
    for (const m of minutes) if (m.t >= start && m.t < start + 3600) addEncoded(h, m.hist);
    assert.equal(hour.p50_ms, quantile(h, 0.5));
    assert.equal(hour.p95_ms, quantile(h, 0.95));
    assert.equal(hour.p99_ms, quantile(h, 0.99));
  }
  assert.equal(
    coarse.points.reduce((n, p) => n + p.errors_5xx, 0),
    12,
  );
  // The 24 h range reads 5-minute rows, the 30 d range 2-hour rows: the same as the minutes merged.
  const day = queryRequests(env.db, { appId: 'A1', range: '24h', now });
  assert.equal(total(day), 2160);
  for (const [answer, step] of [
    [day, 300],
    [month, 7200],
  ] as const) {
    for (const p of answer.points.filter((x) => x.requests > 0)) {
      const start = Date.parse(p.t) / 1000;
      const h = newHistogram();
      for (const m of minutes) if (m.t >= start && m.t < start + step) addEncoded(h, m.hist);
      assert.deepEqual(
        [p.p50_ms, p.p95_ms, p.p99_ms],
        [quantile(h, 0.5), quantile(h, 0.95), quantile(h, 0.99)],
        `${step} s step at ${p.t}`,
      );
    }
  }
});

test('the 5-minute and 2-hour rows are built from history written before they existed (migration 0009)', async () => {
  let now = Date.now();
  const { env, series } = await rig(() => now);
  // Two hours of traffic ending now, and host vitals along.
  const from = now - 7_200_000;
  for (let at = from; at < now; at += 20_000) {
    series.observe(
      entry(
        at,
        at % 3 === 0 ? 'api.shop.example.com' : 'shop.example.com',
        at % 7 === 0 ? 502 : 200,
        (at / 1000) % 300,
      ),
    );
    addVitalsSample(env.db, {
      at,
      cpu_percent: 40,
      mem_used_bytes: 10,
      mem_total_bytes: 20,
      disk_used_bytes: 30,
      disk_total_bytes: 40,
      load1: 1,
    });
  }
  series.flush(true);
  const ranges = ['24h', '30d'] as const;
  const before = ranges.map((range) => [
    queryRequests(env.db, { appId: 'A1', range, now }),
    queryHost(env.db, { range, now }),
  ]);
  assert.ok(total(before[0]![0]!) > 300);
  // As a database from before the change holds them: no rows at those steps.
  await env.db.deleteFrom('request_series').where('res', 'in', [300, 7200]).execute();
  await env.db.deleteFrom('host_vitals').where('res', 'in', [300, 7200]).execute();
  assert.equal(total(queryRequests(env.db, { appId: 'A1', range: '24h', now })), 0);
  await migrations['0009_series_steps']!.up(env.db);
  const after = ranges.map((range) => [
    queryRequests(env.db, { appId: 'A1', range, now }),
    queryHost(env.db, { range, now }),
  ]);
  assert.deepEqual(after, before);
});

test('90 days of a fake clock: retention keeps the row count bounded and old data readable at coarser steps', async () => {
  let now = T0;
  const { env, series } = await rig(() => now);
  const count = async (res?: number) => {
    let q = env.db.selectFrom('request_series').select(env.db.fn.countAll<number>().as('n'));
    if (res !== undefined) q = q.where('res', '=', res);
    return Number((await q.executeTakeFirstOrThrow()).n);
  };
  // Dense for the first two days (a request every 10 s), then one every 5 minutes, for 95 days;
  // the roll-up job runs every simulated hour.
  const end = T0 + 95 * 86_400_000;
  let step = 10_000;
  let lastJob = T0;
  for (let at = T0; at < end; at += step) {
    series.observe(entry(at, 'shop.example.com', 200, 12));
    series.observe(entry(at, 'unknown.example.org', 200, 12));
    now = at;
    if (at - lastJob >= 3_600_000) {
      series.flush();
      series.prune();
      lastJob = at;
      // While dense, the 10 s rows must stop growing at their bound.
      assert.ok((await count(10)) <= 2 * (RETENTION[10] / 10 + 1));
    }
    if (at >= T0 + 2 * 86_400_000) step = 300_000;
  }
  now = end;
  series.flush(true);
  series.prune();
  const rows = await count();
  assert.ok(rows <= 2 * MAX_ROWS_PER_SERIES, `${rows} rows for 2 series, bound ${2 * MAX_ROWS_PER_SERIES}`);
  for (const res of RESOLUTIONS) {
    const oldest = await env.db
      .selectFrom('request_series')
      .select((eb) => eb.fn.min<number>('t').as('t'))
      .where('res', '=', res)
      .executeTakeFirstOrThrow();
    assert.ok(oldest.t >= end / 1000 - RETENTION[res], `res ${res} keeps ${RETENTION[res]} s`);
  }
  // Exactly what 5-minute traffic leaves: per series 288 ten-second rows, 2016 minute rows, 2160 hour rows (+ edges).
  assert.ok((await count(10)) <= 2 * 289);
  assert.ok((await count(60)) <= 2 * 2017);
  assert.ok((await count(3600)) <= 2 * 2161);
  assert.ok((await count(300)) <= 2 * 289);
  assert.ok((await count(7200)) <= 2 * 361);
  const month = queryRequests(env.db, { appId: 'A1', range: '30d', now });
  assert.equal(month.points.length, 360);
  assert.equal(month.points[0]!.requests, 24, '12 requests an hour, 2-hour steps, 30 days back');
  assert.ok(month.points.filter((p) => p.requests > 0).length >= 359);
  assert.ok(month.points.filter((p) => p.requests > 0).every((p) => p.p50_ms > 10 && p.p50_ms <= 15));
  // Host vitals follow the same retention.
  for (let at = T0; at < end; at += 3_600_000)
    addVitalsSample(env.db, {
      at,
      cpu_percent: 50,
      mem_used_bytes: 1,
      mem_total_bytes: 2,
      disk_used_bytes: 3,
      disk_total_bytes: 4,
      load1: 0.5,
    });
  pruneSeries(env.db, end);
  const vit = Number(
    (
      await env.db
        .selectFrom('host_vitals')
        .select(env.db.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
  // Hour samples: 24 + 7 * 24 + 24 + 90 * 24 + 30 * 12 rows (10 s, 1 min, 5 min, 1 h, 2 h), plus edges.
  assert.ok(vit <= 24 + 2 + 7 * 24 + 2 + 24 + 2 + 90 * 24 + 2 + 30 * 12 + 2, `${vit} vitals rows`);
});

test('host vitals: /proc parsers, averages per step, the sampler records into every resolution', async () => {
  assert.deepEqual(parseProcStat('cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n'), {
    busy: 200,
    total: 1000,
  });
  assert.equal(parseProcStat('intr 1 2 3'), null);
  assert.deepEqual(
    parseMeminfo('MemTotal:       16000 kB\nMemFree:         1000 kB\nMemAvailable:    4000 kB\n'),
    { total: 16000 * 1024, available: 4000 * 1024 },
  );
  assert.equal(parseMeminfo('nothing'), null);

  let now = T0 + 30_000;
  const env = await memoryEnv();
  addVitalsSample(env.db, {
    at: T0 + 1000,
    cpu_percent: 10,
    mem_used_bytes: 100,
    mem_total_bytes: 1000,
    disk_used_bytes: 5,
    disk_total_bytes: 50,
    load1: 1,
  });
  addVitalsSample(env.db, {
    at: T0 + 5000,
    cpu_percent: 30,
    mem_used_bytes: 300,
    mem_total_bytes: 1000,
    disk_used_bytes: 7,
    disk_total_bytes: 50,
    load1: 3,
  });
  const h = queryHost(env.db, { range: '1h', now });
  // One step has samples: it is the only vitals entry (the current step, still without one, is absent, not zeros).
  assert.deepEqual(h.vitals, [
    {
      t: new Date(T0).toISOString(),
      cpu_percent: 20,
      mem_used_bytes: 200,
      mem_total_bytes: 1000,
      disk_used_bytes: 6,
      disk_total_bytes: 50,
      load1: 2,
    },
  ]);
  assert.equal(h.points.length, 360, 'request points keep their zero-filled gaps');
  const day = queryHost(env.db, { range: '7d', now });
  assert.equal(
    day.vitals.filter((v) => v.cpu_percent === 20).length,
    1,
    'the hour row holds the same average',
  );

  // The real sampler reads this machine.
  const sampler = new VitalsSampler({ db: env.db, dataDir: '/', now: () => now });
  await sampler.sample();
  now += 10_000;
  const s = (await sampler.sample())!;
  assert.ok(s.mem_total_bytes > 0 && s.mem_used_bytes > 0 && s.mem_used_bytes <= s.mem_total_bytes);
  assert.ok(s.disk_total_bytes > 0 && s.disk_used_bytes <= s.disk_total_bytes);
  assert.ok(s.cpu_percent >= 0 && s.cpu_percent <= 100);
  assert.deepEqual(sampler.latest(), s);
  const rows = await env.db
    .selectFrom('host_vitals')
    .select(['res'])
    .where('t', '>=', Math.floor((T0 + 30_000) / 1000 / 3600) * 3600)
    .execute();
  assert.deepEqual(
    [...new Set(rows.map((r) => r.res))].sort((a, b) => a - b),
    [...RESOLUTIONS],
  );
});

test("Caddy's access line: bytes and duration are read for the metrics", () => {
  const line = JSON.stringify({
    level: 'info',
    ts: 1795430575.2849438,
    logger: 'http.log.access.svc',
    msg: 'handled request',
    request: {
      remote_ip: '127.0.0.1',
      remote_port: '44650',
      proto: 'HTTP/2.0',
      method: 'GET',
      host: 'app.example.com:18443',
      uri: '/',
    },
    user_id: '',
    duration: 0.003080146,
    size: 937,
    status: 200,
  });
  const e = parseAccessLine(line)!;
  assert.equal(e.bytes, 937);
  assert.ok(Math.abs(e.durationMs - 3.080146) < 1e-9);
  assert.equal(e.host, 'app.example.com:18443');
  const odd = parseAccessLine(
    JSON.stringify({ request: { remote_ip: '127.0.0.1' }, status: 200, size: -5, duration: 'slow' }),
  )!;
  assert.equal(odd.bytes, 0);
  assert.equal(odd.durationMs, 0);
});

test("the host WebSocket topic and /metrics show the sampler's own sample, not a reading of their own", async () => {
  const env = await memoryEnv({ SVC_DATA_DIR: tmpdir() });
  const streams = registerStreams(env);
  try {
    const s = (await env.vitals.sample())!;
    assert.ok(s.mem_used_bytes > 0);
    const seen: any[] = [];
    const off = await env.bus.subscribe('host', (e) => seen.push(e.data));
    await poll('a host event', () => seen.length > 0, 10_000, 10);
    off();
    assert.equal(seen[0].at, new Date(s.at).toISOString());
    // Memory in use moves by the byte between two readings: equal figures mean one sample.
    assert.deepEqual(seen[0].memory, { total_bytes: s.mem_total_bytes, used_bytes: s.mem_used_bytes });
    assert.equal(seen[0].cpu_percent, s.cpu_percent);
    const text = (await env.metrics.render()).text;
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    assert.equal(gauge('svc_host_memory_used_bytes'), s.mem_used_bytes);
    assert.equal(gauge('svc_host_disk_used_bytes'), s.disk_used_bytes);
    assert.equal(gauge('svc_host_cpu_usage_ratio'), s.cpu_percent / 100);
  } finally {
    streams.stopAll();
    await env.db.destroy();
  }
});
