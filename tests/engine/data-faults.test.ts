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
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { needDbImages, type DbImages } from '../_support/dbimages.js';
import { until } from './_helpers.js';
import { CATALOG } from '../../lib/databases/catalog.js';
import { deleteApp } from '../../lib/apps/ops.js';
import { recoverRuns, settleJobs } from '../../lib/backups/run.js';
import { LABEL_SCRATCH } from '../../lib/backups/engines.js';
import { LABEL_MANAGED } from '../../lib/docker/index.js';
import { BASE_IMAGE, ensureBaseImage } from '../_support/docker.js';
import type { BusEvent } from '../../lib/events/bus.js';

const run = promisify(execFile);
let s: TestServer;
let c: Client;
const apps: string[] = [];
const events: any[] = [];
/** A database of this instance, once a test made one. */
let someDb: string | null = null;

before(async () => {
  const { ensureDbImages } = await import('../_support/dbimages.js');
  const img = await ensureDbImages().catch(() => null);
  const map: Record<string, string> = {};
  if (img) for (const ref of Object.values(CATALOG.postgres.images)) map[ref] = img.postgres;
  s = await startTestServer(img ? { SVC_IMAGE_MAP: JSON.stringify(map) } : {});
  c = await adminClient(s);
  s.env.bus.subscribe('backups', (e: BusEvent) => events.push(e.data ?? e));
});
after(async () => {
  await settleJobs();
  for (const id of apps) await deleteApp(s.env, id, { volumes: true }).catch((e) => console.error('cleanup', e));
  await s.stop();
});

async function pgApp(): Promise<{ app: { id: string; name: string }; dbId: string }> {
  const name = `flt-${Math.random().toString(36).slice(2, 8)}`;
  const a = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: 'svc-test/busybox:latest' } });
  assert.equal(a.status, 201, a.text);
  apps.push(a.body.app.id);
  const d = await c.req('POST', `/api/apps/${a.body.app.id}/databases`, { engine: 'postgres', version: '15' });
  assert.equal(d.status, 202, d.text);
  await until(
    'postgres ready',
    async () => {
      const x = (await c.req('GET', `/api/apps/${a.body.app.id}/databases`)).body.items.find((i: any) => i.id === d.body.database.id);
      if (x.status === 'error') throw new Error(x.error);
      return x.status === 'ready' ? x : null;
    },
    300_000,
    1000,
  );
  someDb = d.body.database.id;
  return { app: a.body.app, dbId: d.body.database.id };
}

async function psql(app: { id: string; name: string }, image: string, sql: string): Promise<string> {
  const url = (await c.req('GET', `/api/apps/${app.id}/env/DATABASE_URL/reveal`)).body.value as string;
  const ct = await s.env.engine.docker.createContainer({
    Image: image,
    Entrypoint: ['psql', url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql],
    User: '999',
    Labels: { 'svc.test.data': app.name },
    HostConfig: { NetworkMode: `svc-${app.name}` },
  });
  try {
    await ct.start();
    const res = await ct.wait();
    const logs = (await ct.logs({ stdout: true, stderr: true })) as Buffer;
    let out = '';
    for (let i = 0; i + 8 <= logs.length; i += 8 + logs.readUInt32BE(i + 4)) out += logs.subarray(i + 8, i + 8 + logs.readUInt32BE(i + 4)).toString();
    assert.equal(res.StatusCode, 0, out);
    return out.trim();
  } finally {
    await ct.remove({ force: true, v: true });
  }
}

async function runOnce(appId: string, bid: string, settled: (r: any) => boolean = (r) => r.status !== 'running'): Promise<any> {
  const r = await c.req('POST', `/api/apps/${appId}/backups/${bid}/run`);
  assert.equal(r.status, 202, r.text);
  return until(
    'backup run',
    async () => {
      const x = await c.req('GET', `/api/apps/${appId}/backups/runs/${r.body.run.id}`);
      return settled(x.body.run) ? x.body.run : null;
    },
    600_000,
    1000,
  );
}

test('a disk that fills mid-artifact: the run fails with the reason, emits backup_failed, leaves no partial file; older artifacts and later runs are fine', async (t) => {
  const images: DbImages | null = await needDbImages(t);
  if (!images) return;
  const { app, dbId } = await pgApp();
  await psql(app, images.postgres, "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g;");
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, { source: { type: 'database', database_id: dbId }, schedule: '0 3 * * *', keep_last: 3 });
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
    await psql(app, images.postgres, 'CREATE TABLE blobs (id int primary key, body text); INSERT INTO blobs SELECT g, md5(random()::text) || md5(random()::text) FROM generate_series(1, 200000) g;');
    const full = await runOnce(app.id, bid);
    assert.equal(full.status, 'failed');
    assert.match(full.error ?? '', /no space left on device|ENOSPC/i);
    assert.ok(full.finished_at);
    const failed = await until('backup_failed event', async () => events.find((e) => e.type === 'backup_failed' && e.run_id === full.id), 30_000, 200);
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
    const dl = await fetch(`${s.url}/api/apps/${app.id}/backups/runs/${good.id}/download`, { headers: { cookie: c.cookieHeader() } });
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
  await psql(app, images.postgres, "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g;");
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, { source: { type: 'database', database_id: dbId }, schedule: '0 3 * * *', keep_last: 5, verify_after_run: true });
  assert.equal(cfg.status, 201, cfg.text);
  assert.equal(cfg.body.backup.verify_after_run, true);
  const bid = cfg.body.backup.id;
  const verdict = (r: any) => r.status !== 'running' && (r.status !== 'succeeded' || Boolean(r.verified_at || r.verify_error));

  const ok = await runOnce(app.id, bid, verdict);
  assert.equal(ok.status, 'succeeded', ok.error);
  assert.ok(ok.verified_at, ok.verify_error);
  assert.equal(ok.verify_error, null);
  assert.ok(!events.some((e) => e.type === 'backup_failed' && e.run_id === ok.id));

  // Roles are cluster-wide, so pg_dump does not carry them; a policy naming one restores only
  // where that role exists. The live restore path works, a fresh server does not.
  await psql(app, images.postgres, 'CREATE ROLE reporter NOLOGIN; ALTER TABLE notes ENABLE ROW LEVEL SECURITY; CREATE POLICY reporter_reads ON notes FOR SELECT TO reporter USING (true);');
  const bad = await runOnce(app.id, bid, verdict);
  assert.equal(bad.status, 'succeeded', bad.error);
  assert.equal(bad.verified_at, null);
  assert.match(bad.verify_error ?? '', /reporter/);
  const note = await until('backup_failed for the verify', async () => events.find((e) => e.type === 'backup_failed' && e.run_id === bad.id), 30_000, 200);
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
  const scratch = (id: string) => d.createContainer({ Image: BASE_IMAGE, Cmd: ['sleep', '600'], Labels: { [LABEL_MANAGED]: 'true', [LABEL_SCRATCH]: id } });
  const left = await scratch(dbId);
  const foreign = await scratch('0'.repeat(26));
  try {
    await left.start();
    await recoverRuns(s.env);
    await assert.rejects(left.inspect(), (e: any) => e.statusCode === 404, 'the left-over scratch server is gone');
    assert.equal((await foreign.inspect()).Config.Labels[LABEL_SCRATCH], '0'.repeat(26), "another instance's stays");
  } finally {
    await left.remove({ force: true, v: true }).catch(() => {});
    await foreign.remove({ force: true, v: true }).catch(() => {});
  }
});
