// Backup faults over the real path (real server, real engine, the local Postgres image):
// - a disk that fills mid-artifact: a 2 MiB tmpfs mounted where the local destination writes
//   this app's artifacts; a dump larger than that fails the run with the OS's reason, emits
//   backup_failed, leaves no partial file, and the earlier artifact and later runs are fine;
// - verify_after_run: an on-demand run verifies its artifact in a scratch instance; a database
//   whose dump does not restore into a fresh server (a row-level security policy naming a role
//   that lives only in the source cluster, as roles are not part of pg_dump) records
//   verify_error and notifies backup_failed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { adminClient, type Client, type TestServer } from '../_support/server.js';
import { needDbImages, type DbImages } from '../_support/dbimages.js';
import { until } from './_helpers.js';
import { newApp, provisionDb, psql as psqlIn, runBackup, startDataServer, stopDataServer } from './_data.js';
import { recoverRuns } from '#lib/backups/recovery.js';
import { settleJobs } from '#lib/backups/jobs.js';
import { LABEL_SCRATCH } from '#lib/docker/names.js';
import { LABEL_MANAGED } from '#lib/docker/index.js';
import { LABEL_INSTANCE, ownerLabels } from '#lib/docker/owner.js';
import { BASE_IMAGE, ensureBaseImage } from '../_support/docker.js';
import type { BusEvent } from '#lib/events/bus.js';

const run = promisify(execFile);
let s: TestServer;
let c: Client;
const apps: string[] = [];
const events: any[] = [];
/** A database of this instance, once a test made one. */
let someDb: string | null = null;

before(async () => {
  s = await startDataServer(['postgres']);
  c = await adminClient(s);
  s.env.bus.subscribe('backups', (e: BusEvent) => events.push(e.data ?? e));
});
after(() => stopDataServer(s, apps));

async function pgApp(): Promise<{ app: { id: string; name: string }; dbId: string }> {
  const app = await newApp(c, apps, 'flt');
  const db = await provisionDb(c, app.id, 'postgres', '15');
  someDb = db.id;
  return { app, dbId: db.id };
}

const psql = (app: { id: string; name: string }, image: string, sql: string) => psqlIn(s, c, app, image, sql);
const runOnce = (appId: string, bid: string, settled?: (r: any) => boolean) =>
  runBackup(c, appId, bid, { timeoutMs: 600_000, everyMs: 1000, settled });

test('a disk that fills mid-artifact: the run fails with the reason, emits backup_failed, leaves no partial file; older artifacts and later runs are fine', async (t) => {
  const images: DbImages | null = await needDbImages(t);
  if (!images) return;
  const { app, dbId } = await pgApp();
  await psql(
    app,
    images.postgres,
    "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g;",
  );
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'database', database_id: dbId },
    schedule: '0 3 * * *',
    keep_last: 3,
  });
  assert.equal(cfg.status, 201, cfg.text);
  const bid = cfg.body.backup.id;

  // The local destination writes <data>/backups/<app id>/; a 2 MiB filesystem goes there.
  const dir = join(s.dataDir, 'backups', app.id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await run('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', '--', 'tmpfs', dir]);
  try {
    const good = await runOnce(app.id, bid);
    assert.equal(good.status, 'succeeded', good.error);
    const goodFile = join(dir, `${good.id}.svcbak`);
    assert.equal(
      createHash('sha256')
        .update(await readFile(goodFile))
        .digest('hex'),
      good.sha256,
    );

    // About 13 MB of hex text: roughly 7 MB after gzip, far more than the filesystem holds.
    await psql(
      app,
      images.postgres,
      'CREATE TABLE blobs (id int primary key, body text); INSERT INTO blobs SELECT g, md5(random()::text) || md5(random()::text) FROM generate_series(1, 200000) g;',
    );
    const full = await runOnce(app.id, bid);
    assert.equal(full.status, 'failed');
    assert.match(full.error ?? '', /no space left on device|ENOSPC/i);
    assert.ok(full.finished_at);
    const failed = await until(
      'backup_failed event',
      async () => events.find((e) => e.type === 'backup_failed' && e.run_id === full.id),
      30_000,
      200,
    );
    assert.match(failed.error, /no space left on device|ENOSPC/i);
    assert.ok(!events.some((e) => e.type === 'backup_succeeded' && e.run_id === full.id));
    // The dump does not outlive its run: a pg_dump left blocked on its stdout would hold its
    // locks (the DROP TABLE below would wait forever).
    const [dbc] = await s.env.engine.docker.listContainers({ filters: { name: [`svc-${app.name}-db`] } });
    assert.ok(dbc, 'the database container');
    await until(
      'pg_dump to end',
      async () => {
        const top = await s.env.engine.docker.getContainer(dbc.Id).top();
        return !top.Processes.some((p: string[]) => p.join(' ').includes('pg_dump'));
      },
      60_000,
      500,
    );
    // No partial artifact: only the good one is in the directory.
    assert.deepEqual(await readdir(dir), [`${good.id}.svcbak`]);
    assert.equal(
      createHash('sha256')
        .update(await readFile(goodFile))
        .digest('hex'),
      good.sha256,
    );

    // The control plane keeps working: the overview lists the failure, the good artifact
    // downloads, and a later run (nothing left stuck "running") succeeds once space is back.
    const ov = await c.req('GET', '/api/backups');
    assert.equal(ov.status, 200, ov.text);
    assert.ok(ov.body.failed_last_7d.some((r: any) => r.id === full.id));
    const dl = await fetch(`${s.url}/api/apps/${app.id}/backups/runs/${good.id}/download`, {
      headers: { cookie: c.cookieHeader() },
    });
    assert.equal(dl.status, 200);
    assert.ok((await dl.arrayBuffer()).byteLength > 0);
    await psql(app, images.postgres, 'DROP TABLE blobs');
    const later = await runOnce(app.id, bid);
    assert.equal(later.status, 'succeeded', later.error);
    assert.deepEqual((await readdir(dir)).sort(), [`${good.id}.svcbak`, `${later.id}.svcbak`].sort());
    const runs = (await c.req('GET', `/api/apps/${app.id}/backups/${bid}/runs`)).body.items;
    assert.deepEqual(
      runs.map((r: any) => r.status),
      ['succeeded', 'failed', 'succeeded'],
    );
  } finally {
    await settleJobs();
    await run('umount', ['--', dir]);
  }
});

test('verify_after_run: an on-demand run verifies its artifact; a dump that does not restore into a fresh server records verify_error and notifies', async (t) => {
  const images: DbImages | null = await needDbImages(t);
  if (!images) return;
  const { app, dbId } = await pgApp();
  await psql(
    app,
    images.postgres,
    "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g;",
  );
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'database', database_id: dbId },
    schedule: '0 3 * * *',
    keep_last: 5,
    verify_after_run: true,
  });
  assert.equal(cfg.status, 201, cfg.text);
  assert.equal(cfg.body.backup.verify_after_run, true);
  const bid = cfg.body.backup.id;
  const verdict = (r: any) =>
    r.status !== 'running' && (r.status !== 'succeeded' || Boolean(r.verified_at || r.verify_error));

  const ok = await runOnce(app.id, bid, verdict);
  assert.equal(ok.status, 'succeeded', ok.error);
  assert.ok(ok.verified_at, ok.verify_error);
  assert.equal(ok.verify_error, null);
  assert.ok(!events.some((e) => e.type === 'backup_failed' && e.run_id === ok.id));

  // Roles are cluster-wide, so pg_dump does not carry them; a policy naming one restores only
  // where that role exists. The live restore path works, a fresh server does not.
  await psql(
    app,
    images.postgres,
    'CREATE ROLE reporter NOLOGIN; ALTER TABLE notes ENABLE ROW LEVEL SECURITY; CREATE POLICY reporter_reads ON notes FOR SELECT TO reporter USING (true);',
  );
  const bad = await runOnce(app.id, bid, verdict);
  assert.equal(bad.status, 'succeeded', bad.error);
  assert.equal(bad.verified_at, null);
  assert.match(bad.verify_error ?? '', /reporter/);
  const note = await until(
    'backup_failed for the verify',
    async () => events.find((e) => e.type === 'backup_failed' && e.run_id === bad.id),
    30_000,
    200,
  );
  assert.equal(note.stage, 'verify');
  assert.match(note.error, /verification failed: .*reporter/);
  // The first run's verdict stands.
  const first = (await c.req('GET', `/api/apps/${app.id}/backups/runs/${ok.id}`)).body.run;
  assert.ok(first.verified_at);
});

test('boot removes the scratch server of a verify the process died during; one made for another instance stays', async (t) => {
  const images: DbImages | null = await needDbImages(t);
  if (!images) return;
  const dbId = someDb ?? (await pgApp()).dbId;
  await ensureBaseImage();
  const d = s.env.engine.docker;
  const scratch = (id: string, owner: Record<string, string>) =>
    d.createContainer({
      Image: BASE_IMAGE,
      Cmd: ['sleep', '600'],
      Labels: { ...owner, [LABEL_MANAGED]: 'true', [LABEL_SCRATCH]: id },
    });
  const left = await scratch(dbId, ownerLabels(s.env.engine));
  const foreign = await scratch('0'.repeat(26), { [LABEL_INSTANCE]: 'another-instance' });
  try {
    await left.start();
    await recoverRuns(s.env);
    await assert.rejects(
      left.inspect(),
      (e: any) => e.statusCode === 404,
      'the left-over scratch server is gone',
    );
    assert.equal(
      (await foreign.inspect()).Config.Labels[LABEL_SCRATCH],
      '0'.repeat(26),
      "another instance's stays",
    );
  } finally {
    await left.remove({ force: true, v: true }).catch(() => {});
    await foreign.remove({ force: true, v: true }).catch(() => {});
  }
});
