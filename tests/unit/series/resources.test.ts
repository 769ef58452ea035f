// Resource history: the sampler turns engine readings into per-service samples (CPU as the share
// of one core since the previous reading, memory against its limit, restarts as increases of the
// restart count), the one-minute rows add samples up, and the range query averages them per step.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { openDb, migrate, type Db } from '#lib/db/index.js';
import { ResourceSampler } from '#lib/resources/sampler.js';
import type { ContainerReading } from '#lib/resources/readings.js';
import { addResourceSamples, pruneResources, readResourceRows } from '#lib/series/resource-store.js';
import { queryResources, resourceWindow } from '#lib/series/resource-query.js';

let db: Db;
let now: number;
const GiB = 1024 ** 3;

beforeEach(async () => {
  db = openDb(':memory:');
  await migrate(db);
  await db
    .insertInto('apps')
    .values({
      id: 'app1',
      name: 'shop',
      source: '{}',
      status: 'running',
      created_at: 'x',
      updated_at: 'x',
    } as never)
    .execute();
  now = Date.parse('2024-05-01T10:00:05Z');
});
afterEach(() => db.destroy());

const reading = (over: Partial<ContainerReading>): ContainerReading => ({
  app: 'shop',
  service: 'web',
  container: 'c1',
  running: true,
  health: 'none',
  cpuNs: 0,
  memoryBytes: 100 * 1024 ** 2,
  memoryLimitBytes: GiB,
  restartCount: 0,
  at: now,
  ...over,
});

test('the sampler: CPU since the previous reading, memory against the limit, restarts, unhealthy', async () => {
  let readings: ContainerReading[] = [];
  const s = new ResourceSampler({
    db,
    now: () => now,
    intervalMs: 10_000,
    hostMemory: () => 8 * GiB,
    read: async () => readings,
  });
  readings = [reading({ cpuNs: 1e9 }), reading({ container: 'c2', cpuNs: 5e9, memoryLimitBytes: null })];
  await s.sample();
  assert.equal(s.latest('app1')[0]!.cpuPercent, 0, 'the first reading has nothing to compare with');
  now += 10_000;
  // c1 used 5 s of CPU in 10 s (50%), c2 10 s (100%); c1 restarted twice and is unhealthy.
  readings = [
    reading({ cpuNs: 6e9, restartCount: 2, health: 'unhealthy', memoryBytes: 512 * 1024 ** 2 }),
    reading({ container: 'c2', cpuNs: 15e9, memoryLimitBytes: null }),
    reading({ app: 'not-ours', container: 'x' }),
  ];
  await s.sample();
  const [web] = s.latest('app1');
  assert.equal(web!.cpuPercent, 150);
  assert.equal(web!.memoryPercent, 50, 'the worst container against its own limit');
  assert.equal(web!.memoryLimitBytes, GiB + 8 * GiB, 'no limit: the host memory');
  assert.equal(web!.unhealthy, 1);
  assert.equal(web!.measured, 2, 'both containers read (the other app is not ours)');
  assert.equal(s.restartsSince('app1', now - 1000), 2);
  assert.equal(s.restartsSince(null, now + 1), 0);
  assert.deepEqual(s.latest('other'), []);
  // Stale readings are not offered to the rules.
  now += 60_000;
  assert.deepEqual(s.latest(), []);
  assert.equal(s.fresh(), false);
  const rows = readResourceRows(db, { appId: 'app1', start: 0, end: 2e9 });
  assert.equal(rows.length, 1, 'both samples in the one minute row');
  assert.equal(rows[0]![2], 2, 'two samples');
  assert.equal(rows[0]![6], 2, 'two restarts');
});

test('the range query: averages per step, absent steps absent, services apart, checked window', () => {
  const t0 = Date.parse('2024-05-01T10:00:00Z');
  const sample = (minute: number, service: string, cpu: number, mem: number, restarts = 0) => ({
    appId: 'app1',
    service,
    at: t0 + minute * 60_000 + 5000,
    cpuPercent: cpu,
    memoryBytes: mem,
    memoryLimitBytes: 1000,
    restarts,
  });
  addResourceSamples(db, [
    sample(0, 'web', 10, 100),
    sample(0, 'web', 30, 300),
    sample(1, 'web', 50, 500, 1),
    sample(0, 'worker', 1, 10),
    sample(4, 'web', 70, 700),
  ]);
  const nowMs = t0 + 5 * 60_000;
  const r = queryResources(db, 'app1', { from: '2024-05-01T10:00:00Z', to: '2024-05-01T10:05:00Z' }, nowMs);
  assert.deepEqual(
    r.items.map((i) => [i.at.slice(11, 16), i.service, i.cpu_percent, i.memory_bytes, i.restarts]),
    [
      ['10:00', 'web', 20, 200, 0],
      ['10:00', 'worker', 1, 10, 0],
      ['10:01', 'web', 50, 500, 1],
      ['10:04', 'web', 70, 700, 0],
    ],
  );
  const two = queryResources(
    db,
    'app1',
    { from: '2024-05-01T10:00:00Z', to: '2024-05-01T10:05:00Z', step: 120, service: 'web' },
    nowMs,
  );
  assert.deepEqual(
    two.items.map((i) => [i.at.slice(11, 16), i.cpu_percent, i.restarts]),
    [
      ['10:00', 30, 1],
      ['10:04', 70, 0],
    ],
  );
  assert.equal(resourceWindow({ range: '30d' }, nowMs).step, 5220, 'the smallest step giving 500 points');
  assert.throws(() => resourceWindow({ step: 90 }, nowMs), /multiple of 60/);
  assert.throws(() => resourceWindow({ range: '24h', step: 60 }, nowMs), /at most 500 points/);
  assert.throws(
    () => resourceWindow({ from: '2024-05-01T11:00:00Z', to: '2024-05-01T10:00:00Z' }, nowMs),
    /before to/,
  );
  assert.throws(() => resourceWindow({ from: 'yesterday' }, nowMs), /ISO-8601/);
  assert.throws(() => resourceWindow({ range: '2h' }, nowMs), /one of 1h/);
  // Kept 30 days.
  assert.equal(pruneResources(db, t0 + 31 * 86_400_000), 4);
});
