// S3 backups over the real server, the real engine and a real S3 API server on loopback
// (s3rver, see tests/_support/s3.ts for what it does not check). A Postgres database (local
// image) whose artifact is larger than one part goes up as a multipart upload, is listed in
// the bucket, restored, verified; retention removes old objects; a tampered object is refused;
// refused credentials and an unreachable endpoint fail the run with the provider's reason and
// leave no object behind; bad destinations are 400s at save time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { adminClient, type Client, type TestServer } from '../_support/server.js';
import { needDbImages, type DbImages } from '../_support/dbimages.js';
import { startS3, S3_KEY, type S3Server } from '../_support/s3.js';
import { freePort } from '../_support/net.js';
import {
  insertDeadRun,
  newApp,
  provisionDb,
  startDataServer,
  psql as psqlIn,
  restoreRun,
  retentionApplied,
  runBackup,
  stopDataServer,
  verifyRun,
} from './_data.js';
import { recoverRuns } from '#lib/backups/recovery.js';
import { PART_SIZE } from '#lib/backups/s3.js';
import type { BusEvent } from '#lib/events/bus.js';

let s: TestServer;
let c: Client;
let s3: S3Server;
const apps: string[] = [];
const events: BusEvent[] = [];
const PREFIX = 'svc/test';
// s3rver does not check signatures, so any secret works; a distinct one shows it never leaks.
const SECRET = 'svc-test-secret-7f3a9c';

before(async () => {
  s = await startDataServer(['postgres']);
  c = await adminClient(s);
  s.env.bus.subscribe('backups', (e) => events.push(e));
  s3 = await startS3();
});
after(async () => {
  await stopDataServer(s, apps);
  await s3?.stop();
});

async function listKeys(): Promise<Array<{ key: string; size: number; etag: string }>> {
  const r = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/` }));
  return (r.Contents ?? [])
    .map((o) => ({ key: o.Key!, size: o.Size!, etag: o.ETag ?? '' }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

async function getObject(key: string): Promise<Buffer> {
  const r = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await r.Body!.transformToByteArray());
}

const psql = (app: { id: string; name: string }, image: string, sql: string) => psqlIn(s, c, app, image, sql);
const runOnce = (appId: string, bid: string) => runBackup(c, appId, bid);
const restore = (appId: string, rid: string) => restoreRun(c, appId, rid);
const verify = (appId: string, rid: string) => verifyRun(c, appId, rid);

test('s3: postgres backed up by multipart upload, listed, restored, verified; retention; tamper refused; failed runs leave nothing', async (t) => {
  const images: DbImages | null = await needDbImages(t);
  if (!images) return;
  const app = await newApp(c, apps, 's3t');
  const db = await provisionDb(c, app.id, 'postgres', '15');
  // Hex text compresses about 2:1, so ~13 MB of it makes an artifact of more than one 5 MiB part.
  await psql(
    app,
    images.postgres,
    "CREATE TABLE blobs (id int primary key, body text); INSERT INTO blobs SELECT g, md5(random()::text) || md5(random()::text) FROM generate_series(1, 200000) g; CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g;",
  );
  const fingerprint = "SELECT count(*) || ':' || md5(string_agg(body, ',' ORDER BY id)) FROM blobs";
  const original = await psql(app, images.postgres, fingerprint);

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
  const base = { source: { type: 'database', database_id: db.id }, schedule: '0 3 * * *', keep_last: 2 };

  // Save time: what is knowable is a 400 naming the field, and nothing is saved.
  const closed = await freePort();
  const bad: Array<[object, string, RegExp]> = [
    [{ ...dest, bucket: 'no-such-bucket' }, 'destination.bucket', /does not exist/],
    [{ ...dest, access_key_id: 'WRONGKEY1' }, 'destination.access_key_id', /InvalidAccessKeyId|refused/],
    [{ ...dest, endpoint: `http://127.0.0.1:${closed}` }, 'destination.endpoint', /ECONNREFUSED|connect/],
    [{ ...dest, endpoint: 'http://169.254.169.254' }, 'destination.endpoint', /link-local/],
    [{ ...dest, endpoint: 'http://[::ffff:169.254.169.254]:9000' }, 'destination.endpoint', /link-local/],
    [{ ...dest, endpoint: 'http://8.8.8.8' }, 'destination.endpoint', /https/],
  ];
  for (const [destination, field, why] of bad) {
    const r = await c.req('POST', `/api/apps/${app.id}/backups`, {
      ...base,
      destination: { ...destination, secret_access_key: 'sekrit-value-42' },
    });
    assert.equal(r.status, 400, `${JSON.stringify(destination)}: ${r.text}`);
    assert.equal(r.body.details[0].field, field, r.text);
    assert.match(r.body.error, why);
    assert.ok(!r.text.includes('sekrit-value-42'));
  }
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/backups`)).body.items, []);

  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, { ...base, destination: dest });
  assert.equal(cfg.status, 201, cfg.text);
  const bid = cfg.body.backup.id;
  const { secret_access_key: _s, ...shown } = dest;
  assert.deepEqual(cfg.body.backup.destination, { ...shown, secret_set: true });
  const listed = await c.req('GET', `/api/apps/${app.id}/backups`);
  assert.ok(
    !listed.text.includes(SECRET) && !listed.text.includes('secret_access_key') && !cfg.text.includes(SECRET),
  );

  const runs: any[] = [];
  for (let i = 0; i < 3; i++) {
    runs.push(await runOnce(app.id, bid));
    assert.equal(runs[i].status, 'succeeded', runs[i].error);
  }
  assert.ok(
    runs[2].size_bytes > PART_SIZE,
    `artifact of ${runs[2].size_bytes} bytes is not larger than a part`,
  );
  // keep_last 2: the oldest object is gone from the bucket and its run answers 410.
  await retentionApplied(c, app.id, runs[0].id);
  const keys = await listKeys();
  assert.deepEqual(
    keys.map((k) => k.key),
    [runs[1], runs[2]].map((r) => `${PREFIX}/${app.id}/${r.id}.svcbak`).sort(),
  );
  for (const k of keys) {
    const run = runs.find((r) => k.key.endsWith(`${r.id}.svcbak`));
    assert.equal(k.size, run.size_bytes);
    assert.equal(
      createHash('sha256')
        .update(await getObject(k.key))
        .digest('hex'),
      run.sha256,
    );
  }
  // Multipart: s3rver logged part 2 of an upload of this object.
  const partTwo = s3.log.filter((l) => l.includes(`/${runs[2].id}.svcbak?`) && /partNumber=2\b/.test(l));
  assert.ok(
    partTwo.length > 0,
    `no part 2 uploaded: ${s3.log.filter((l) => l.includes(runs[2].id)).join('\n')}`,
  );
  assert.equal((await c.req('GET', `/api/apps/${app.id}/backups/runs/${runs[0].id}/download`)).status, 410);
  const dl = await fetch(`${s.url}/api/apps/${app.id}/backups/runs/${runs[2].id}/download`, {
    headers: { cookie: c.cookieHeader() },
  });
  assert.equal(dl.status, 200);
  assert.ok((await dl.arrayBuffer()).byteLength > 0);

  // Restore from S3 brings the original rows back; verify passes.
  await psql(app, images.postgres, "DELETE FROM blobs WHERE id > 100; UPDATE notes SET body = 'changed'");
  const rs = await restore(app.id, runs[2].id);
  assert.equal(rs.status, 'succeeded', rs.error);
  assert.equal(await psql(app, images.postgres, fingerprint), original);
  assert.equal(await psql(app, images.postgres, 'SELECT min(body) FROM notes'), 'note 1');
  const v = await verify(app.id, runs[2].id);
  assert.ok(v.verified_at, v.verify_error);

  // A tampered object (one bit flipped, written over the original) is refused everywhere.
  const key = `${PREFIX}/${app.id}/${runs[2].id}.svcbak`;
  const bytes = await getObject(key);
  bytes[Math.floor(bytes.length / 2)] ^= 0x01;
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: bytes }));
  await psql(app, images.postgres, "UPDATE notes SET body = 'after tamper' WHERE id = 1");
  const refused = await c.req('GET', `/api/apps/${app.id}/backups/runs/${runs[2].id}/download`);
  assert.equal(refused.status, 409, refused.text);
  assert.match(refused.body.error, /authentication/);
  const rs2 = await restore(app.id, runs[2].id);
  assert.equal(rs2.status, 'failed');
  assert.match(rs2.error, /authentication/);
  assert.equal(await psql(app, images.postgres, 'SELECT body FROM notes WHERE id = 1'), 'after tamper');
  assert.match((await verify(app.id, runs[2].id)).verify_error ?? '', /authentication/);

  // Credentials revoked after saving (the row edited as a rotation would leave it): the run
  // fails with the provider's reason, emits backup_failed, and the bucket is unchanged.
  const before = await listKeys();
  const row = await s.env.db
    .selectFrom('backup_configs')
    .select('destination')
    .where('id', '=', bid)
    .executeTakeFirstOrThrow();
  await s.env.db
    .updateTable('backup_configs')
    .set({ destination: JSON.stringify({ ...JSON.parse(row.destination), access_key_id: 'REVOKED1' }) })
    .where('id', '=', bid)
    .execute();
  const denied = await runOnce(app.id, bid);
  assert.equal(denied.status, 'failed');
  assert.match(denied.error, /InvalidAccessKeyId/);
  assert.ok(!denied.error.includes(SECRET));
  assert.ok(
    events.some((e) => (e.data as any).type === 'backup_failed' && (e.data as any).run_id === denied.id),
  );
  assert.deepEqual(await listKeys(), before);

  // The endpoint goes away: the run fails naming the connection error, nothing is left.
  await s.env.db
    .updateTable('backup_configs')
    .set({
      destination: JSON.stringify({ ...JSON.parse(row.destination), endpoint: `http://127.0.0.1:${closed}` }),
    })
    .where('id', '=', bid)
    .execute();
  const gone = await runOnce(app.id, bid);
  assert.equal(gone.status, 'failed');
  assert.match(gone.error, /ECONNREFUSED|connect/);
  assert.deepEqual(await listKeys(), before);
  // The earlier artifacts survive failed runs: retention runs after a success only.
  await s.env.db
    .updateTable('backup_configs')
    .set({ destination: row.destination })
    .where('id', '=', bid)
    .execute();
  const ok = (await c.req('GET', `/api/apps/${app.id}/backups/runs/${runs[1].id}`)).body.run;
  assert.equal(ok.artifact_removed, false);
  const again = await verify(app.id, runs[1].id);
  assert.ok(again.verified_at, again.verify_error);
});

test('s3: a run the process died during ends interrupted at boot; its object goes, older objects stay', async () => {
  // Mirrors the local-destination test in data-backups.test.ts: the rows and the bucket as a
  // kill -9 leaves them. The dead run's upload had completed (the window between
  // CompleteMultipartUpload and recording success), and a second multipart upload of the same
  // key is still open with one part. s3rver implements neither ListMultipartUploads nor
  // AbortMultipartUpload, so only objects can be asserted here; the product's listing of open
  // uploads is shown to have been asked for.
  const app = await newApp(c, apps, 's3k');
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
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'volume', volume: 'gone' },
    schedule: '0 3 * * *',
    keep_last: 3,
    destination: dest,
  });
  assert.equal(cfg.status, 201, cfg.text);
  const bid = cfg.body.backup.id;
  const { oldId, deadId } = await insertDeadRun(s.env.db, app.id, bid, 'schedule');
  const oldKey = `${PREFIX}/${app.id}/${oldId}.svcbak`;
  const deadKey = `${PREFIX}/${app.id}/${deadId}.svcbak`;
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: oldKey, Body: 'old' }));
  await s3.client.send(
    new PutObjectCommand({ Bucket: s3.bucket, Key: deadKey, Body: 'whole but unrecorded' }),
  );
  const mpu = await s3.client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: deadKey }));
  await s3.client.send(
    new UploadPartCommand({
      Bucket: s3.bucket,
      Key: deadKey,
      UploadId: mpu.UploadId,
      PartNumber: 1,
      Body: Buffer.alloc(1024, 7),
    }),
  );
  const mine = (await listKeys()).filter((k) => k.key.includes(app.id)).map((k) => k.key);
  assert.deepEqual(mine, [oldKey, deadKey]);
  const logged = s3.log.length;

  await recoverRuns(s.env);

  const runs = (await c.req('GET', `/api/apps/${app.id}/backups/${bid}/runs`)).body.items;
  const dead = runs.find((r: any) => r.id === deadId);
  assert.equal(dead.status, 'interrupted');
  assert.match(dead.error, /stopped/);
  assert.ok(dead.finished_at);
  assert.equal(dead.artifact_removed, true);
  assert.deepEqual(
    (await listKeys()).filter((k) => k.key.includes(app.id)).map((k) => k.key),
    [oldKey],
  );
  assert.equal((await getObject(oldKey)).toString(), 'old');
  assert.ok(
    s3.log.slice(logged).some((l) => /[?&]uploads=?(&|\s|$)/.test(l)),
    `no ListMultipartUploads asked: ${s3.log.slice(logged).join('\n')}`,
  );
  const old = runs.find((r: any) => r.id === oldId);
  assert.equal(old.status, 'succeeded');
  assert.equal(old.artifact_removed, false);
});
