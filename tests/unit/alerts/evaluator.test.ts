// Alert rules over a real database with measured values handed in: a level fires once after
// for_s, stays firing without a second notification, resolves once; a counted metric fires at
// once; a restart (a new evaluator and outbox on the same rows) repeats nothing and sends what
// was left pending; two evaluators racing move a rule once.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { openDb, migrate, type Db } from '#lib/db/index.js';
import { Bus } from '#lib/events/bus.js';
import { AlertEvaluator } from '#lib/alerts/evaluator.js';
import { AlertOutbox } from '#lib/alerts/outbox.js';
import { createRule, updateRule } from '#lib/alerts/index.js';
import { getRule, listEvents, listRules } from '#lib/alerts/store.js';
import { scheduleInterval } from '#lib/alerts/metrics.js';
import type { ServiceResources } from '#lib/resources/sampler.js';
import type { VitalsSample } from '#lib/series/vitals.js';

let db: Db;
let now: number;
let cpu: number;
let restartTimes: number[];
let sent: Array<{ event: string; rule: unknown; channels: readonly string[] }>;
let stopped: boolean;

const notifier = {
  // A stopping notifier reaches nobody.
  async send(event: string, data: Record<string, unknown>, channels: readonly string[]) {
    if (stopped) return 0;
    sent.push({ event, rule: data.rule, channels });
    return channels.length || 1;
  },
  isStopped: () => stopped,
};

function machinery() {
  const bus = new Bus();
  const published: unknown[] = [];
  bus.onAny((e) => published.push(e.data));
  const outbox = new AlertOutbox({ db, notifier: notifier as never, now: () => now });
  const latest: () => ServiceResources[] = () => [
    {
      appId: 'app1',
      service: 'web',
      at: now,
      cpuPercent: cpu,
      memoryBytes: 1,
      memoryLimitBytes: 10,
      memoryPercent: 10,
      unhealthy: 0,
      measured: 1,
    },
  ];
  const vitals: VitalsSample = {
    at: now,
    cpu_percent: 5,
    mem_used_bytes: 1,
    mem_total_bytes: 4,
    disk_used_bytes: 95,
    disk_total_bytes: 100,
    load1: 0,
  };
  const evaluator = new AlertEvaluator({
    db,
    bus,
    now: () => now,
    intervalMs: 1000,
    outbox,
    inputs: {
      resources: {
        fresh: () => true,
        latest: (appId?: string) => (appId === undefined || appId === 'app1' ? latest() : []),
        restartsSince: (_app: string | null, since: number) => restartTimes.filter((t) => t >= since).length,
      },
      vitals: { latest: () => vitals },
      series: { flush: () => 0 },
    },
  });
  return { evaluator, outbox, published };
}

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
  now = Date.parse('2024-05-01T10:00:00Z');
  cpu = 10;
  restartTimes = [];
  sent = [];
  stopped = false;
});
afterEach(() => db.destroy());

async function tick(m: ReturnType<typeof machinery>, seconds = 15) {
  now += seconds * 1000;
  await m.evaluator.evaluate();
  await m.outbox.idle();
}

test('a new instance has the disk, certificate and backup rules', async () => {
  const rules = (await listRules(db)).map((r) => [r.metric, r.op, r.threshold, r.app_id, r.enabled]);
  assert.deepEqual(rules.sort(), [
    ['backup_age_schedules', '>', 2, null, true],
    ['certificate_days_left', '<', 14, null, true],
    ['disk_percent', '>', 90, null, true],
  ]);
});

test('a level fires once after for_s, stays firing quietly, resolves once', async () => {
  const m = machinery();
  const rule = await createRule(
    db,
    { name: 'hot', app_id: 'app1', metric: 'cpu_percent', op: '>', threshold: 80, for_s: 60, channels: [] },
    now,
  );
  cpu = 95;
  await tick(m); // the condition starts holding
  await tick(m, 30);
  assert.equal((await getRule(db, rule.id)).state, 'ok', 'not yet: 30 s of 60');
  await tick(m, 31);
  const firing = await getRule(db, rule.id);
  assert.equal(firing.state, 'firing');
  assert.equal(firing.value, 95);
  for (let i = 0; i < 5; i++) await tick(m);
  const mine = () => sent.filter((s) => s.rule === 'hot');
  assert.deepEqual(
    mine().map((s) => s.event),
    ['alert_fired'],
  );
  // Resolved once the value stayed low for for_s too (a dip does not resolve it).
  cpu = 20;
  await tick(m);
  cpu = 95;
  await tick(m);
  cpu = 20;
  await tick(m);
  await tick(m, 30);
  assert.equal((await getRule(db, rule.id)).state, 'firing', 'low for 30 s of 60');
  await tick(m, 31);
  assert.deepEqual(
    mine().map((s) => s.event),
    ['alert_fired', 'alert_resolved'],
  );
  const events = await listEvents(db, { ruleId: rule.id, limit: 10 });
  assert.deepEqual(
    events.map((e) => [e.kind, e.notified]),
    [
      ['resolved', true],
      ['fired', true],
    ],
  );
  assert.ok(
    m.published.some((d) => (d as { type?: string }).type === 'alert_fired'),
    'the alerts topic heard it',
  );
});

test('a condition that breaks before for_s starts its wait again', async () => {
  const m = machinery();
  const rule = await createRule(
    db,
    { name: 'flappy', app_id: 'app1', metric: 'cpu_percent', op: '>', threshold: 80, for_s: 60 },
    now,
  );
  cpu = 95;
  await tick(m);
  await tick(m, 40);
  cpu = 10;
  await tick(m, 5);
  cpu = 95;
  await tick(m, 5);
  await tick(m, 40);
  assert.equal((await getRule(db, rule.id)).state, 'ok');
  await tick(m, 25);
  assert.equal((await getRule(db, rule.id)).state, 'firing');
});

test('counted metrics fire at the first window that meets the condition', async () => {
  const m = machinery();
  const rule = await createRule(
    db,
    { name: 'restarts', app_id: 'app1', metric: 'restarts', op: '>', threshold: 2, for_s: 300, channels: [] },
    now,
  );
  restartTimes = [now - 400_000, now + 1000, now + 2000, now + 3000];
  await tick(m, 5);
  assert.equal((await getRule(db, rule.id)).state, 'firing');
  assert.equal((await getRule(db, rule.id)).value, 3, 'the one outside the window does not count');
  now += 400_000;
  await tick(m);
  assert.equal((await getRule(db, rule.id)).state, 'ok');
});

test('a restart while firing repeats nothing; a notification left pending is sent once by the next start', async () => {
  let m = machinery();
  const rule = await createRule(
    db,
    { name: 'restart-me', app_id: 'app1', metric: 'cpu_percent', op: '>', threshold: 80, for_s: 0 },
    now,
  );
  cpu = 99;
  await tick(m);
  const mine = () => sent.filter((s) => s.rule === 'restart-me').map((s) => s.event);
  assert.deepEqual(mine(), ['alert_fired']);
  // The control plane stops and starts again: the rule is still firing.
  await m.evaluator.stop();
  await m.outbox.stop();
  m = machinery();
  m.outbox.kick();
  await tick(m);
  await tick(m);
  assert.deepEqual(mine(), ['alert_fired'], 'no second alert_fired after the restart');
  // It resolves while the notifier is stopping and reaches nobody: the event stays pending...
  cpu = 5;
  stopped = true;
  await tick(m);
  assert.deepEqual(mine(), ['alert_fired']);
  const pending = await listEvents(db, { ruleId: rule.id, limit: 5 });
  assert.equal(pending[0]!.notified, false, 'cut short by the stop: not marked');
  await m.outbox.stop();
  // ...and the next start sends it, once.
  stopped = false;
  m = machinery();
  m.outbox.kick();
  await m.outbox.idle();
  await tick(m);
  assert.deepEqual(mine(), ['alert_fired', 'alert_resolved']);
  assert.equal((await listEvents(db, { ruleId: rule.id, limit: 5 }))[0]!.notified, true);
});

test('two evaluators racing on the same rows move a rule once', async () => {
  const a = machinery();
  const b = machinery();
  await createRule(db, { name: 'race', metric: 'disk_percent', op: '>', threshold: 90, for_s: 0 }, now);
  now += 1000;
  await Promise.all([a.evaluator.evaluate(), b.evaluator.evaluate()]);
  await Promise.all([a.outbox.idle(), b.outbox.idle()]);
  const events = (await listEvents(db, { limit: 20 })).filter((e) => e.rule === 'race');
  assert.equal(events.length, 1);
});

test('disabling a firing rule resolves it with one notification; checks name what is wrong', async () => {
  const m = machinery();
  const rule = await createRule(
    db,
    { name: 'disk', metric: 'disk_percent', op: '>', threshold: 50, for_s: 0 },
    now,
  );
  await tick(m);
  assert.equal((await getRule(db, rule.id)).state, 'firing');
  const { resolved } = await updateRule(db, rule.id, { enabled: false }, now);
  assert.equal(resolved, true);
  m.outbox.kick();
  await m.outbox.idle();
  assert.deepEqual(
    sent.filter((s) => s.rule === 'disk').map((s) => s.event),
    ['alert_fired', 'alert_resolved'],
  );
  await assert.rejects(
    createRule(db, { name: 'x', app_id: 'app1', metric: 'disk_percent', op: '>', threshold: 1 }, now),
    /host only/,
  );
  await assert.rejects(
    createRule(db, { name: 'x', app_id: 'nope', metric: 'cpu_percent', op: '>', threshold: 1 }, now),
    /No app/,
  );
  await assert.rejects(
    createRule(
      db,
      { name: 'x', metric: 'cpu_percent', op: '>', threshold: 1, channels: ['ch-missing'] },
      now,
    ),
    /No notification channel/,
  );
});

test('a schedule interval is the time between its next two slots', () => {
  const at = Date.parse('2024-05-01T10:00:00Z');
  assert.equal(scheduleInterval('0 3 * * *', at), 86_400);
  assert.equal(scheduleInterval('*/15 * * * *', at), 900);
  assert.equal(scheduleInterval('not cron', at), null);
});
