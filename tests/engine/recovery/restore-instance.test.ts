// `svc restore-instance` with the real CLI on a fresh data directory, from a local file and from
// the S3 server: a wrong key, a tampered artifact and an occupied data directory are refused with
// nothing written; a running service is refused; the restore puts the database (0600) and Caddy's
// storage back, and the next start on the same key serves the same API token, marks the restored
// run succeeded, reports its recovery and removes the marker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminClient,
  apiToken,
  startTestServer,
  ADMIN,
  TEST_MASTER_KEY,
  Client,
  type TestServer,
} from '../../_support/server.js';
import { startS3, S3_KEY, type S3Server } from '../../_support/s3.js';
import { runCli, serve } from '../../_support/cli.js';
import { until } from '../_helpers.js';
import { settleJobs } from '#lib/backups/jobs.js';

let a: TestServer;
let c: Client;
let s3: S3Server;
const dirs: string[] = [];
const PREFIX = 'dr';
const CERT = 'certificate bytes\n';

async function tmp(name: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), name));
  dirs.push(d);
  return d;
}

before(async () => {
  const caddy = await tmp('svc-caddy-a-');
  await mkdir(join(caddy, 'certificates', 'ca', 'site.example'), { recursive: true });
  await writeFile(join(caddy, 'certificates', 'ca', 'site.example', 'site.example.crt'), CERT);
  a = await startTestServer({ SVC_CADDY_STORAGE: caddy });
  c = await adminClient(a);
  s3 = await startS3();
});
after(async () => {
  await settleJobs();
  await a?.stop();
  await s3?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function runBackup(): Promise<any> {
  const r = await c.req('POST', '/api/instance/backup/run');
  assert.equal(r.status, 202, r.text);
  return until('run', async () => {
    const x = (await c.req('GET', `/api/instance/backup/runs/${r.body.run.id}`)).body.run;
    return x.status !== 'running' && x.verified_at ? x : null;
  });
}

test('restore-instance: refusals write nothing; a restore from S3 comes back on the same key with the same token', async () => {
  const token = await apiToken(c, 'ops');
  const local = await runBackup();
  const file = join(a.dataDir, 'backups', 'instance', `${local.id}.svcbak`);
  await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  const dest = {
    type: 's3',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    bucket: s3.bucket,
    prefix: PREFIX,
    access_key_id: S3_KEY.id,
    secret_access_key: 'x-secret',
    path_style: true,
  };
  assert.equal((await c.req('PUT', '/api/instance/backup', { destination: dest })).status, 200);
  const remote = await runBackup();

  const b = await tmp('svc-b-');
  const bCaddy = join(await tmp('svc-caddy-b-'), 'caddy');
  const vars = { SVC_DATA_DIR: b, SVC_CADDY_STORAGE: bCaddy, SVC_PORT: '1', S3_SECRET: 'x-secret' };
  const empty = async () => assert.deepEqual(await readdir(b), [], 'nothing was written');

  // A wrong key: the artifact does not authenticate.
  const wrong = await runCli(['restore-instance', file, '--key', 'b'.repeat(64)], vars);
  assert.equal(wrong.code, 1, wrong.stderr);
  assert.match(wrong.stderr, /refused: .*authentication.*Nothing was restored/);
  await empty();
  // A tampered artifact.
  const bytes = await readFile(file);
  bytes[bytes.length - 100] ^= 1;
  const bad = join(await tmp('svc-bad-'), 'x.svcbak');
  await writeFile(bad, bytes);
  const tampered = await runCli(['restore-instance', bad, '--key', TEST_MASTER_KEY], vars);
  assert.equal(tampered.code, 1);
  assert.match(tampered.stderr, /failed its authentication tag/);
  await empty();
  // No key: a usage error.
  const usage = await runCli(['restore-instance', file], vars);
  assert.equal(usage.code, 2);

  const s3Args = [
    '--s3-endpoint',
    s3.endpoint,
    '--s3-access-key-id',
    S3_KEY.id,
    '--s3-secret-access-key-env',
    'S3_SECRET',
    '--path-style',
  ];
  const url = `s3://${s3.bucket}/${PREFIX}/instance/${remote.id}.svcbak`;
  const ok = await runCli(['restore-instance', url, '--key', TEST_MASTER_KEY, ...s3Args], vars);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, new RegExp(`authenticated ${url}: instance [0-9a-f]+, backup run ${remote.id}`));
  assert.match(ok.stdout, /sealed secrets open with this key/);
  assert.ok(!ok.stdout.includes(TEST_MASTER_KEY) && !ok.stdout.includes('x-secret'));
  assert.equal((await stat(join(b, 'svc.db'))).mode & 0o777, 0o600);
  assert.equal(
    await readFile(join(bCaddy, 'certificates', 'ca', 'site.example', 'site.example.crt'), 'utf8'),
    CERT,
  );
  assert.ok(existsSync(join(b, 'recovery-pending.json')));
  assert.deepEqual((await readdir(b)).sort(), ['recovery-pending.json', 'spool', 'svc.db'].sort());

  // Occupied: refused without --force.
  const again = await runCli(['restore-instance', file, '--key', TEST_MASTER_KEY], vars);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already exists.*--force/);

  const served = await serve({
    SVC_DATA_DIR: b,
    SVC_CADDY_STORAGE: bCaddy,
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_PROXY: 'off',
    SVC_ACCESS_LOG: join(b, 'access.log'),
    SVC_SECURITY_DIR: join(b, 'security'),
  });
  try {
    const port = new URL(served.url).port;
    const running = await runCli(['restore-instance', file, '--key', TEST_MASTER_KEY, '--force'], {
      ...vars,
      SVC_PORT: port,
    });
    assert.equal(running.code, 1);
    assert.match(running.stderr, /a service answers on port/);

    const tc = new Client(served.url);
    tc.bearer = token;
    const report = await until('recovery', async () => {
      const r = await tc.req('GET', '/api/instance/recovery');
      return r.status === 200 && r.body.finished_at ? r.body : null;
    });
    assert.deepEqual(report.items, []);
    const runs = (await tc.req('GET', '/api/instance/backup/runs')).body.items;
    const back = runs.find((r: any) => r.id === remote.id);
    assert.equal(back.status, 'succeeded', 'the run the copy was taken during is that backup, succeeded');
    assert.equal(back.sha256, remote.sha256);
    assert.equal(existsSync(join(b, 'recovery-pending.json')), false, 'recovery runs once');
  } finally {
    await served.stop();
  }

  // --force keeps the database that was there.
  const forced = await runCli(['restore-instance', file, '--key', TEST_MASTER_KEY, '--force'], vars);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(forced.stdout, /kept the database that was there as .*svc\.db\.replaced-/);
  assert.ok((await readdir(b)).some((n) => /^svc\.db\.replaced-/.test(n)));
});
