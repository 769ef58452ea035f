// Instance settings with no engine behind them, in-process: the base domain (automatic hosts and
// the control domain follow it), the instance backup configuration and its (empty) run list, the
// recovery report, fail2ban from the host agent's snapshot. Runs of an instance backup need the
// engine: tests/engine/recovery/instance-backup.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { RECOVERY_SETTING } from '#lib/instance/recovery.js';
import { onPostgres } from '../../_support/postgres.js';

let s: TestApp;
let c: Client;

before(async () => {
  s = await startTestApp({ SVC_SECURITY_AGENT: 'true' });
  c = await adminClient(s);
});
after(() => s?.stop());

const stepUp = async () =>
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);

test('base domain: unset at first; a PUT sets it with the control domain, a bad name is a 400 that changes nothing, null clears', async () => {
  const first = await c.req('GET', '/api/instance/base-domain');
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.base_domain, null);
  assert.equal(first.body.control_domain, null);
  assert.equal(typeof first.body.proxy, 'object');

  const set = await c.req('PUT', '/api/instance/base-domain', { base_domain: 'Apps.Example.org' });
  assert.equal(set.status, 200, set.text);
  assert.equal(set.body.base_domain, 'apps.example.org');
  assert.equal(set.body.control_domain, 'svc.apps.example.org');
  const got = await c.req('GET', '/api/instance/base-domain');
  assert.deepEqual(
    [got.body.base_domain, got.body.control_domain],
    ['apps.example.org', 'svc.apps.example.org'],
  );

  const bad = await c.req('PUT', '/api/instance/base-domain', { base_domain: 'no_underscores.example' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.body.code, 'bad_request');
  assert.equal(
    (await c.req('PUT', '/api/instance/base-domain', { domain: 'x.example' })).status,
    400,
    'unknown field',
  );
  assert.equal(
    (await c.req('GET', '/api/instance/base-domain')).body.base_domain,
    'apps.example.org',
    'unchanged',
  );

  const events = (await c.req('GET', '/api/audit?limit=20')).body.items.filter(
    (e: any) => e.event === 'instance.base_domain',
  );
  assert.ok(events.length >= 1, 'audited');

  const cleared = await c.req('PUT', '/api/instance/base-domain', { base_domain: null });
  assert.equal(cleared.status, 200, cleared.text);
  assert.equal(cleared.body.base_domain, null);
  assert.equal(cleared.body.control_domain, null);
});

test('instance backup: defaults until saved, a harmless change saved, lowering keep_last needs a step-up, bad input 400, no runs yet', async () => {
  const cfg = await c.req('GET', '/api/instance/backup');
  assert.equal(cfg.status, 200, cfg.text);
  assert.deepEqual(
    { ...cfg.body.backup, updated_at: 'x' },
    {
      schedule: '0 3 * * *',
      keep_last: 7,
      destination: { type: 'local' },
      enabled: false,
      last_run: null,
      updated_at: 'x',
    },
  );
  const saved = await c.req('PUT', '/api/instance/backup', { schedule: '30 4 * * *', keep_last: 9 });
  assert.equal(saved.status, 200, saved.text);
  assert.deepEqual([saved.body.backup.schedule, saved.body.backup.keep_last], ['30 4 * * *', 9]);
  const low = await c.req('PUT', '/api/instance/backup', { keep_last: 2 });
  assert.equal(low.status, 403, low.text);
  assert.equal(low.body.code, 'step_up_required');
  const bad = await c.req('PUT', '/api/instance/backup', { schedule: '* * * * * *' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.body.code, 'bad_request');
  assert.equal((await c.req('PUT', '/api/instance/backup', { keep: 3 })).status, 400, 'unknown field');
  await stepUp();
  assert.equal((await c.req('PUT', '/api/instance/backup', { keep_last: 400 })).status, 400);
  const after = await c.req('GET', '/api/instance/backup');
  assert.deepEqual(
    [after.body.backup.schedule, after.body.backup.keep_last],
    ['30 4 * * *', 9],
    'the refusals changed nothing',
  );

  const runs = await c.req('GET', '/api/instance/backup/runs');
  assert.equal(runs.status, 200, runs.text);
  assert.deepEqual(runs.body.items, []);
});

test('GET /api/instance/info names the database it runs on; on PostgreSQL an instance backup run is refused with the reason', async () => {
  const info = await c.req('GET', '/api/instance/info');
  assert.equal(info.status, 200, info.text);
  assert.equal(info.body.database.dialect, onPostgres() ? 'postgres' : 'sqlite');
  assert.ok(info.body.database.size_bytes > 0, info.text);
  if (!onPostgres()) return;
  await stepUp();
  const run = await c.req('POST', '/api/instance/backup/run');
  assert.equal(run.status, 409, run.text);
  assert.match(run.body.error, /PostgreSQL \(SVC_DATABASE_URL\): back it up with pg_dump/);
  assert.deepEqual((await c.req('GET', '/api/instance/backup/runs')).body.items, [], 'no run recorded');
});

test('recovery: 404 until a recovery ran, then its report', async () => {
  const none = await c.req('GET', '/api/instance/recovery');
  assert.equal(none.status, 404, none.text);
  assert.equal(none.body.code, 'not_found');
  const report = {
    started_at: '2025-01-02T03:04:05.000Z',
    finished_at: '2025-01-02T03:05:00.000Z',
    items: [{ kind: 'app', id: 'a1', name: 'shop', outcome: 'redeployed', detail: 'deployment d1' }],
  };
  await s.env.db
    .insertInto('settings')
    .values({ key: RECOVERY_SETTING, value: JSON.stringify(report) })
    .execute();
  const r = await c.req('GET', '/api/instance/recovery');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body, report);
});

test('fail2ban: unavailable without a snapshot, its jails from one, unavailable (not a 500) from garbage', async () => {
  const dir = s.env.config.security.dir;
  const none = await c.req('GET', '/api/security/fail2ban');
  assert.equal(none.status, 200, none.text);
  assert.equal(none.body.available, false);
  assert.equal(typeof none.body.reason, 'string');
  await mkdir(dir, { recursive: true });
  const jails = [{ name: 'sshd', currently_banned: 1, total_banned: 3, banned_ips: ['192.0.2.7'] }];
  const snapshot = {
    version: 1,
    generated_at: new Date().toISOString(),
    firewall: { backend: 'nftables', installed: true, active: true, rules: [] },
    fail2ban: { installed: true, active: true, jails },
  };
  await writeFile(join(dir, 'host-snapshot.json'), JSON.stringify(snapshot));
  const f = await c.req('GET', '/api/security/fail2ban');
  assert.equal(f.status, 200, f.text);
  assert.equal(f.body.available, true);
  assert.equal(f.body.stale, false);
  assert.equal(f.body.generated_at, snapshot.generated_at);
  assert.deepEqual(f.body.jails, jails);
  await writeFile(join(dir, 'host-snapshot.json'), 'not json {');
  const garbage = await c.req('GET', '/api/security/fail2ban');
  assert.equal(garbage.status, 200);
  assert.equal(garbage.body.available, false);
});

test('with the agent off, fail2ban says so', async () => {
  const off = await startTestApp();
  try {
    const r = await (await adminClient(off)).req('GET', '/api/security/fail2ban');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.available, false);
    assert.match(r.body.reason, /agent/);
  } finally {
    await off.stop();
  }
});
