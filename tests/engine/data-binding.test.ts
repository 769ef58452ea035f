// A malicious S3 destination: a small HTTP proxy in front of the S3 server (tests/_support/s3.ts)
// answers the GET of one app's artifact with another app's (or another run's) artifact, which
// decrypts under the same master key. Restore, download and verify fetch an artifact once, check
// that copy (sha256, tags, binding to app, config and run) and use that copy: a swap on a second
// request changes nothing, a swap on the first is refused with a clear error, nothing restored.
// Real server, real Postgres containers (local images), real S3 server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { adminClient, type Client, type TestServer } from '../_support/server.js';
import { needDbImages } from '../_support/dbimages.js';
import { startS3, S3_KEY, type S3Server } from '../_support/s3.js';
import {
  newApp,
  provisionDb,
  psql as psqlIn,
  restoreRun,
  runBackup,
  startDataServer,
  stopDataServer,
  verifyRun,
} from './_data.js';

let s: TestServer;
let c: Client;
let s3: S3Server;
let proxy: Server;
let proxyUrl: string;
const apps: string[] = [];
const PREFIX = 'svc/bind';

/** GETs of an object whose path ends in `from` are answered with `to`'s object after `honest` honest answers. */
let swap: { from: string; to: string; honest: number } | null = null;
const gets = new Map<string, number>();

before(async () => {
  s = await startDataServer(['postgres']);
  c = await adminClient(s);
  s3 = await startS3();
  proxy = createServer((req, res) => {
    let path = req.url!;
    const pathname = new URL(path, 'http://x').pathname;
    if (req.method === 'GET' && pathname.endsWith('.svcbak')) {
      const n = (gets.get(pathname) ?? 0) + 1;
      gets.set(pathname, n);
      if (swap && pathname.endsWith(swap.from) && n > swap.honest) path = path.replace(swap.from, swap.to);
    }
    const up = request(
      { host: '127.0.0.1', port: s3.port, method: req.method, path, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
after(async () => {
  await stopDataServer(s, apps);
  await new Promise((r) => proxy?.close(r));
  await s3?.stop();
});

const keyOf = (appId: string, runId: string) => `/${appId}/${runId}.svcbak`;
const getsOf = (appId: string, runId: string) =>
  [...gets].filter(([p]) => p.endsWith(keyOf(appId, runId))).reduce((n, [, k]) => n + k, 0);

async function download(appId: string, rid: string): Promise<{ status: number; body: Buffer }> {
  const r = await fetch(`${s.url}/api/apps/${appId}/backups/runs/${rid}/download`, {
    headers: { cookie: c.cookieHeader() },
  });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

test("a destination serving another app's or another run's artifact is refused on restore, download and verify", async (t) => {
  const images = await needDbImages(t);
  if (!images) return;
  const psql = (app: { id: string; name: string }, sql: string) => psqlIn(s, c, app, images.postgres, sql);
  const A = await newApp(c, apps, 'bda');
  const B = await newApp(c, apps, 'bdb');
  const dbA = await provisionDb(c, A.id, 'postgres', '15');
  const dbB = await provisionDb(c, B.id, 'postgres', '15');
  await psql(A, "CREATE TABLE t (v text); INSERT INTO t VALUES ('marker-of-app-a-7f31')");
  await psql(B, "CREATE TABLE t (v text); INSERT INTO t VALUES ('marker-of-app-b-9c42')");
  const dest = {
    type: 's3',
    endpoint: proxyUrl,
    region: 'us-east-1',
    bucket: s3.bucket,
    prefix: PREFIX,
    access_key_id: S3_KEY.id,
    secret_access_key: 'any',
    path_style: true,
  };
  const config = async (appId: string, dbId: string) => {
    const r = await c.req('POST', `/api/apps/${appId}/backups`, {
      source: { type: 'database', database_id: dbId },
      schedule: '0 3 * * *',
      keep_last: 5,
      destination: dest,
    });
    assert.equal(r.status, 201, r.text);
    return r.body.backup.id as string;
  };
  const bidA = await config(A.id, dbA.id);
  const bidB = await config(B.id, dbB.id);
  const a1 = await runBackup(c, A.id, bidA);
  const b1 = await runBackup(c, B.id, bidB);
  const a2 = await runBackup(c, A.id, bidA);
  for (const r of [a1, b1, a2]) assert.equal(r.status, 'succeeded', r.error);

  // A second GET of A's artifact would get B's: one GET per use, and A's own data comes out.
  swap = { from: keyOf(A.id, a1.id), to: keyOf(B.id, b1.id), honest: 1 };
  gets.clear();
  const dl = await download(A.id, a1.id);
  assert.equal(dl.status, 200, dl.body.toString());
  const dump = gunzipSync(dl.body).toString('latin1');
  assert.ok(
    dump.includes('marker-of-app-a-7f31') && !dump.includes('marker-of-app-b-9c42'),
    'the download holds another app’s data',
  );
  assert.equal(getsOf(A.id, a1.id), 1);
  gets.clear();
  await psql(A, "UPDATE t SET v = 'changed'");
  const rs = await restoreRun(c, A.id, a1.id);
  assert.equal(rs.status, 'succeeded', rs.error);
  assert.equal(await psql(A, 'SELECT v FROM t'), 'marker-of-app-a-7f31');
  assert.equal(getsOf(A.id, a1.id), 1);
  gets.clear();
  const v = await verifyRun(c, A.id, a1.id);
  assert.ok(v.verified_at, v.verify_error);
  assert.equal(getsOf(A.id, a1.id), 1);

  // Every GET of A's artifact answered with B's, or with A's other run's: refused by name.
  await psql(A, "UPDATE t SET v = 'before the refused restores'");
  const cases: Array<[string, string, RegExp]> = [
    [a1.id, keyOf(B.id, b1.id), /belongs to another app/],
    [a2.id, keyOf(A.id, a1.id), /belongs to another run/],
  ];
  for (const [rid, to, why] of cases) {
    swap = { from: keyOf(A.id, rid), to, honest: 0 };
    const refused = await c.req('GET', `/api/apps/${A.id}/backups/runs/${rid}/download`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'conflict');
    assert.match(refused.body.error, why);
    const r = await restoreRun(c, A.id, rid);
    assert.equal(r.status, 'failed');
    assert.match(r.error, why);
    assert.equal(await psql(A, 'SELECT v FROM t'), 'before the refused restores');
    const vr = await verifyRun(c, A.id, rid);
    assert.equal(vr.verified_at, null);
    assert.match(vr.verify_error, why);
  }
  swap = null;

  // The normal path once the destination behaves; no spooled copy is left behind.
  const ok = await restoreRun(c, A.id, a2.id);
  assert.equal(ok.status, 'succeeded', ok.error);
  assert.equal(await psql(A, 'SELECT v FROM t'), 'marker-of-app-a-7f31');
  assert.deepEqual(await readdir(join(s.dataDir, 'spool')), []);
});
