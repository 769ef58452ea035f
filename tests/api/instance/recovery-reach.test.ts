// GET /api/instance/recovery lists only the apps the caller may read: a viewer limited to app A
// sees A's items (its app and its database), never B's nor those of an app deleted since; an
// unlimited operator sees the whole report.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { adminClient } from '../../_support/server.js';
import { people, twoApps } from '../../_support/people.js';
import { RECOVERY_SETTING } from '#lib/instance/recovery.js';

let s: TestApp;

before(async () => {
  s = await startTestApp();
});
after(() => s?.stop());

async function databaseOf(appId: string, id: string): Promise<void> {
  await s.env.db
    .insertInto('app_databases')
    .values({
      id,
      app_id: appId,
      engine: 'postgres',
      version: '16',
      name: 'app',
      username: 'app',
      password_sealed: 'x',
      host: `db-${id}`,
      port: 5432,
      env_var: 'DATABASE_URL',
      container: `svc-db-${id}`,
      volume: `svc-db-${id}`,
      status: 'running',
      error: null,
      created_at: new Date().toISOString(),
    })
    .execute();
}

test('a caller limited to A reads the recovery items of A only', async () => {
  const owner = await adminClient(s);
  const [appA, appB] = await twoApps(owner, ['rec-a', 'rec-b'], 'nginx:1.27');
  await databaseOf(appA, '01dbadbadbadbadbadbadbadba');
  await databaseOf(appB, '01dbbdbbdbbdbbdbbdbbdbbdbb');
  const item = (kind: 'app' | 'database', id: string, name: string) =>
    ({ kind, id, name, outcome: 'redeployed', detail: 'deployment d1' }) as const;
  const report = {
    started_at: '2025-01-02T03:04:05.000Z',
    finished_at: '2025-01-02T03:05:00.000Z',
    items: [
      item('database', '01dbadbadbadbadbadbadbadba', 'rec-a/postgres:db'),
      item('database', '01dbbdbbdbbdbbdbbdbbdbbdbb', 'rec-b/postgres:db'),
      item('app', appA, 'rec-a'),
      item('app', appB, 'rec-b'),
      item('app', '01gonegonegonegonegonegone', 'deleted-since'),
    ],
  };
  await s.env.db
    .insertInto('settings')
    .values({ key: RECOVERY_SETTING, value: JSON.stringify(report) })
    .execute();

  const team = people(s);
  const viewer = await team.operator('rec-viewer', 'viewer', [appA]);
  const limited = await typedClient(s, viewer.token);
  const seen = await limited.GET('/api/instance/recovery');
  assert.equal(seen.response.status, 200, JSON.stringify(seen.error));
  assert.deepEqual(
    seen.data!.items.map((i) => i.name),
    ['rec-a/postgres:db', 'rec-a'],
  );
  assert.ok(!JSON.stringify(seen.data).includes(appB), "B's id is not shown");

  const all = await (await typedClient(s)).GET('/api/instance/recovery');
  assert.deepEqual(all.data, report, 'an unlimited caller reads it whole');
});
