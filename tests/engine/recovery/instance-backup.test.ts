// Instance backups over the real server, to local disk and to a real S3 API server on loopback:
// a run holds a consistent database copy and Caddy's storage (never the master key), its artifact
// verifies, retention keeps keep_last, a tampered artifact fails verification, and the step-up
// rules hold (lowering keep_last, changing the destination, removing an artifact).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import BetterSqlite3 from 'better-sqlite3';
import {
  adminClient,
  startTestServer,
  ADMIN,
  TEST_MASTER_KEY,
  type Client,
  type TestServer,
} from '../../_support/server.js';
import { startS3, S3_KEY, type S3Server } from '../../_support/s3.js';
import { until } from '../_helpers.js';
import { unpackVerified } from '#lib/backups/instance-verify.js';
import { localStore } from '#lib/backups/destinations.js';
import { settleJobs } from '#lib/backups/jobs.js';
import type { BusEvent } from '#lib/events/bus.js';

let s: TestServer;
let c: Client;
let s3: S3Server;
let caddy: string;
const events: BusEvent[] = [];
const SECRET = 'svc-instance-secret-4b1e77';
const CERT = '-----BEGIN CERTIFICATE-----\nfake for the test\n-----END CERTIFICATE-----\n';

before(async () => {
  caddy = await mkdtemp(join(tmpdir(), 'svc-caddy-'));
  const site = join(caddy, 'certificates', 'acme-v02.api.letsencrypt.org-directory', 'app.example.com');
  await mkdir(site, { recursive: true });
  await writeFile(join(site, 'app.example.com.crt'), CERT);
  await writeFile(join(site, 'app.example.com.key'), 'private key bytes');
  await mkdir(join(caddy, 'locks'));
  await writeFile(join(caddy, 'locks', 'issue_cert_app.example.com.lock'), 'held');
  s = await startTestServer({ SVC_CADDY_STORAGE: caddy });
  s.env.bus.subscribe('backups', (e) => events.push(e));
  c = await adminClient(s);
  s3 = await startS3();
});
after(async () => {
  await settleJobs();
  await s?.stop();
  await s3?.stop();
  await rm(caddy, { recursive: true, force: true });
});

async function stepUp(client: Client): Promise<void> {
  const r = await client.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(r.status, 200, r.text);
}

/** Runs the backup; the run once it settled and its verification (always after a run) is in. */
async function runOnce(): Promise<any> {
  // The previous run's verification lands before its job has removed its scratch folders; until
  // then a new run is refused as in progress (409), which is right: ask again.
  const r = await until(
    'the previous instance backup job to finish',
    async () => {
      const a = await c.req('POST', '/api/instance/backup/run');
      return a.status === 409 ? null : a;
    },
    60_000,
    200,
  );
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.run.status, 'running');
  return until(
    'instance backup run',
    async () => {
      const x = (await c.req('GET', `/api/instance/backup/runs/${r.body.run.id}`)).body.run;
      return x.status !== 'running' && (x.status !== 'succeeded' || x.verified_at || x.verify_error)
        ? x
        : null;
    },
    120_000,
    200,
  );
}

const master = Buffer.from(TEST_MASTER_KEY, 'hex');

test('instance backup: config, step-up rules, local runs verify, hold the database and Caddy storage, retention, tamper', async () => {
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

  // Lowering keep_last needs a recent step-up; a harmless change does not; bad input is a 400.
  const low = await c.req('PUT', '/api/instance/backup', { keep_last: 2 });
  assert.equal(low.status, 403, low.text);
  assert.equal(low.body.code, 'step_up_required');
  assert.equal(
    (await c.req('PUT', '/api/instance/backup', { schedule: '30 4 * * *', keep_last: 9 })).status,
    200,
  );
  const bad = await c.req('PUT', '/api/instance/backup', { schedule: '* * * * * *' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(
    (await c.req('PUT', '/api/instance/backup', { keep_last: 0 })).status,
    403,
    'a lower keep_last is refused before it is validated',
  );
  await stepUp(c);
  assert.equal((await c.req('PUT', '/api/instance/backup', { keep_last: 400 })).status, 400);
  const saved = await c.req('PUT', '/api/instance/backup', { keep_last: 2 });
  assert.equal(saved.status, 200, saved.text);
  assert.equal(saved.body.backup.keep_last, 2);
  assert.equal(saved.body.backup.schedule, '30 4 * * *');

  const first = await runOnce();
  assert.equal(first.status, 'succeeded', first.error);
  assert.ok(first.verified_at, first.verify_error);
  assert.equal(first.notes, null);
  const file = join(s.dataDir, 'backups', 'instance', `${first.id}.svcbak`);
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.equal((await stat(file)).size, first.size_bytes);

  // What it holds: the database (settings included), Caddy's files without its locks, never the key.
  const out = await mkdtemp(join(tmpdir(), 'svc-unpacked-'));
  try {
    const instanceId = (
      await s.env.db
        .selectFrom('settings')
        .select('value')
        .where('key', '=', 'instance_id')
        .executeTakeFirstOrThrow()
    ).value;
    const got = await unpackVerified(
      localStore(s.dataDir),
      `instance/${first.id}.svcbak`,
      first.sha256,
      { instance_id: instanceId, run_id: first.id },
      master,
      s.dataDir,
      out,
    );
    assert.equal(got.sha256, first.sha256);
    assert.equal(got.manifest.instance_id, instanceId);
    assert.equal(got.caddy, true);
    const copy = new BetterSqlite3(join(out, 'svc.db'), { readonly: true });
    try {
      assert.equal(
        (copy.prepare("SELECT value FROM settings WHERE key = 'instance_id'").get() as any).value,
        instanceId,
      );
      assert.equal((copy.prepare('SELECT count(*) AS n FROM users').get() as any).n, 1);
    } finally {
      copy.close();
    }
    assert.equal(
      await readFile(
        join(
          out,
          'caddy',
          'certificates',
          'acme-v02.api.letsencrypt.org-directory',
          'app.example.com',
          'app.example.com.crt',
        ),
        'utf8',
      ),
      CERT,
    );
    await assert.rejects(stat(join(out, 'caddy', 'locks')), /ENOENT/);
    const db = await readFile(join(out, 'svc.db'));
    assert.ok(
      !db.includes(Buffer.from(TEST_MASTER_KEY)) && !db.includes(master),
      'the master key is not in the backup',
    );
  } finally {
    await rm(out, { recursive: true, force: true });
  }
  const ok = events.find(
    (e) => (e.data as any).type === 'backup_succeeded' && (e.data as any).run_id === first.id,
  );
  assert.ok(ok && typeof (ok.data as any).instance_id === 'string', 'backup_succeeded names the instance');

  // Retention: with keep_last 2, the third run removes the first artifact.
  const second = await runOnce();
  const third = await runOnce();
  assert.equal(third.status, 'succeeded');
  const runs = (await c.req('GET', '/api/instance/backup/runs')).body.items;
  assert.deepEqual(
    runs.map((r: any) => [r.id, r.artifact_removed]),
    [
      [third.id, false],
      [second.id, false],
      [first.id, true],
    ],
  );
  await assert.rejects(stat(file), /ENOENT/);

  // A flipped byte in a stored artifact: the verification says so.
  const victim = join(s.dataDir, 'backups', 'instance', `${second.id}.svcbak`);
  const bytes = await readFile(victim);
  bytes[bytes.length - 40] ^= 1;
  await writeFile(victim, bytes);
  const v = await c.req('POST', `/api/instance/backup/runs/${second.id}/verify`);
  assert.equal(v.status, 202, v.text);
  const checked = await until('verify', async () => {
    const x = (await c.req('GET', `/api/instance/backup/runs/${second.id}`)).body.run;
    return x.verify_error ? x : null;
  });
  assert.match(checked.verify_error, /authentication/);
  assert.equal(checked.verified_at, null);
  assert.equal((await c.req('POST', `/api/instance/backup/runs/${first.id}/verify`)).status, 410);

  // Removing an artifact needs a step-up (a fresh session has none).
  const fresh = await adminClient(s);
  const del = await fresh.req('DELETE', `/api/instance/backup/runs/${second.id}`);
  assert.equal(del.status, 403, del.text);
  await stepUp(fresh);
  assert.equal((await fresh.req('DELETE', `/api/instance/backup/runs/${second.id}`)).status, 204);
  await assert.rejects(stat(victim), /ENOENT/);

  // Caddy's storage out of reach: the run still succeeds, and its notes say what is missing.
  s.env.config.proxy.caddyStorage = join(caddy, 'nowhere');
  try {
    const blind = await runOnce();
    assert.equal(blind.status, 'succeeded', blind.error);
    assert.match(blind.notes, /not readable.*certificates are not in this backup/);
  } finally {
    s.env.config.proxy.caddyStorage = caddy;
  }
});

test('instance backup to S3: destination change needs a step-up, the secret is never returned, the object verifies; a tampered object fails', async () => {
  const PREFIX = 'svc/instance';
  const dest = {
    type: 's3',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    bucket: s3.bucket,
    prefix: PREFIX,
    access_key_id: S3_KEY.id,
    secret_access_key: SECRET,
    path_style: true,
  };
  const fresh = await adminClient(s);
  const refused = await fresh.req('PUT', '/api/instance/backup', { destination: dest });
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.code, 'step_up_required');
  assert.equal(
    (await fresh.req('GET', '/api/instance/backup')).body.backup.destination.type,
    'local',
    'nothing was saved',
  );
  await stepUp(fresh);
  const badBucket = await fresh.req('PUT', '/api/instance/backup', {
    destination: { ...dest, bucket: 'no-such-bucket' },
  });
  assert.equal(badBucket.status, 400, badBucket.text);
  const put = await fresh.req('PUT', '/api/instance/backup', { destination: dest, enabled: true });
  assert.equal(put.status, 200, put.text);
  assert.ok(!put.text.includes(SECRET));
  const { secret_access_key: _omit, ...sameDest } = dest;
  assert.deepEqual(put.body.backup.destination, { ...sameDest, secret_set: true });
  assert.ok(!(await fresh.req('GET', '/api/instance/backup')).text.includes(SECRET));
  // The same destination given again is no change, so no step-up is needed for it.
  const again = await adminClient(s);
  assert.equal(
    (await again.req('PUT', '/api/instance/backup', { destination: sameDest, enabled: true })).status,
    200,
  );

  const run = await runOnce();
  assert.equal(run.status, 'succeeded', run.error);
  assert.ok(run.verified_at, run.verify_error);
  const key = `${PREFIX}/instance/${run.id}.svcbak`;
  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/` }));
  assert.deepEqual(
    (listed.Contents ?? []).map((o) => [o.Key, o.Size]),
    [[key, run.size_bytes]],
  );

  const obj = Buffer.from(
    await (
      await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
    ).Body!.transformToByteArray(),
  );
  obj[200] ^= 1;
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: obj }));
  assert.equal((await c.req('POST', `/api/instance/backup/runs/${run.id}/verify`)).status, 202);
  const checked = await until('verify', async () => {
    const x = (await c.req('GET', `/api/instance/backup/runs/${run.id}`)).body.run;
    return x.verify_error ? x : null;
  });
  assert.match(checked.verify_error, /authentication|sha256/);
  const audit = await c.req('GET', '/api/audit?limit=200');
  const actions = new Set((audit.body.items ?? []).map((a: any) => a.event ?? a.action));
  for (const a of [
    'instance.backup_updated',
    'instance.backup_run_started',
    'instance.backup_verify_started',
    'instance.backup_run_removed',
  ])
    assert.ok(actions.has(a), `audited: ${a} (${[...actions].join(',')})`);
});
