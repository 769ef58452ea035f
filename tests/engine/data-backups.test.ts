// Backups of named volumes, bad input at save time, the scheduler under a fake clock, and boot
// recovery of a run the process died during. Real server, real engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import {
  demux,
  insertDeadRun,
  newApp,
  restoreRun,
  retentionApplied,
  runBackup,
  stopDataServer,
  verifyRun,
} from './_data.js';
import { runDue } from '#lib/backups/scheduler.js';
import { recoverRuns } from '#lib/backups/recovery.js';
import { settleJobs } from '#lib/backups/jobs.js';
import { LABEL_APP, LABEL_VOLUME, ownerLabels } from '#lib/docker/index.js';

let s: TestServer;
let c: Client;
const apps: string[] = [];

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
});
after(() => stopDataServer(s, apps));

/** An app volume as a deploy makes it (name and labels), filled by a busybox container. */
async function appVolume(app: { name: string }, key: string, script: string): Promise<string> {
  const name = `svc-${app.name}_${key}`;
  await s.env.engine.docker.createVolume({
    Name: name,
    Labels: { ...ownerLabels(s.env.engine), [LABEL_APP]: app.name, [LABEL_VOLUME]: key },
  });
  await sh(name, script);
  return name;
}

async function sh(volume: string, script: string): Promise<string> {
  const ct = await s.env.engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sh', '-c', script],
    HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: volume, Target: '/v' }] },
  });
  try {
    await ct.start();
    const r = await ct.wait();
    const out = demux((await ct.logs({ stdout: true, stderr: true })) as Buffer);
    assert.equal(r.StatusCode, 0, out);
    return out;
  } finally {
    await ct.remove({ force: true, v: true });
  }
}

test('volume: a known file tree is backed up, changed, restored and verified; retention keeps keep_last', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await newApp(c, apps, 'bt');
  const vol = await appVolume(
    app,
    'data',
    'mkdir -p /v/a/b && echo one > /v/a/one.txt && echo two > /v/a/b/two.txt && printf "x%.0s" $(seq 1 5000) > /v/big',
  );
  const sum = 'cd /v && find . -type f | sort | xargs md5sum';
  const original = await sh(vol, sum);
  const over0 = await c.req('GET', '/api/backups');
  assert.ok(over0.body.uncovered.some((u: any) => u.app_id === app.id && u.volume === 'data'));
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'volume', volume: 'data' },
    schedule: '0 3 * * *',
    keep_last: 2,
  });
  assert.equal(cfg.status, 201, cfg.text);
  const bid = cfg.body.backup.id;
  const runs: any[] = [];
  for (let i = 0; i < 3; i++) {
    runs.push(await runBackup(c, app.id, bid, { timeoutMs: 120_000, everyMs: 300 }));
    assert.equal(runs[i].status, 'succeeded', runs[i].error);
  }
  // keep_last 2: the oldest artifact is gone (410), the two newest stay.
  await retentionApplied(c, app.id, runs[0].id);
  await assert.rejects(stat(join(s.dataDir, 'backups', app.id, `${runs[0].id}.svcbak`)));
  await stat(join(s.dataDir, 'backups', app.id, `${runs[2].id}.svcbak`));
  assert.equal((await c.req('GET', `/api/apps/${app.id}/backups/runs/${runs[0].id}/download`)).status, 410);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/backups/${bid}/runs`)).body.items.length, 3);
  assert.ok(
    !(await c.req('GET', '/api/backups')).body.uncovered.some(
      (u: any) => u.app_id === app.id && u.volume === 'data',
    ),
  );

  await sh(vol, 'echo changed > /v/a/one.txt && rm /v/a/b/two.txt');
  const done = await restoreRun(c, app.id, runs[2].id, { timeoutMs: 120_000, everyMs: 300 });
  assert.equal(done.status, 'succeeded', done.error);
  assert.equal(await sh(vol, sum), original);
  const checked = await verifyRun(c, app.id, runs[2].id, { timeoutMs: 120_000, everyMs: 300 });
  assert.ok(checked.verified_at, checked.verify_error);
});

test('bad backup and database input is a 400 naming the field, and saves nothing', async () => {
  const app = await newApp(c, apps, 'bt');
  const base = { source: { type: 'volume', volume: 'data' }, schedule: '0 3 * * *', keep_last: 7 };
  const cases: Array<[object, string]> = [
    [{ ...base, schedule: '0 0 3 * * *' }, 'schedule'],
    [{ ...base, schedule: '61 3 * * *' }, 'schedule'],
    [{ ...base, schedule: 'every day' }, 'schedule'],
    [{ ...base, keep_last: 0 }, 'keep_last'],
    [{ ...base, keep_last: 366 }, 'keep_last'],
    [{ ...base, source: { type: 'volume', volume: '../etc' } }, 'source.volume'],
    [{ ...base, source: { type: 'database', database_id: '0'.repeat(26) } }, 'source.database_id'],
    [
      {
        ...base,
        destination: {
          type: 's3',
          endpoint: 'http://s3.example.com',
          region: 'us-east-1',
          bucket: 'b-1',
          access_key_id: 'AKIAEXAMPLE',
          secret_access_key: 'shh-secret',
        },
      },
      'destination.endpoint',
    ],
  ];
  for (const [body, field] of cases) {
    const r = await c.req('POST', `/api/apps/${app.id}/backups`, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
    assert.equal(r.body.details[0].field, field, r.text);
    assert.ok(!r.text.includes('shh-secret'));
  }
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/backups`)).body.items, []);
  const dbCases: Array<[object, string]> = [
    [{ engine: 'mongodb' }, 'engine'],
    [{ engine: 'postgres', version: '9.6' }, 'version'],
    [{ engine: 'postgres', env_var: '1BAD' }, 'env_var'],
    [{ engine: 'postgres', env_var: 'BAD-NAME' }, 'env_var'],
  ];
  for (const [body, field] of dbCases) {
    const r = await c.req('POST', `/api/apps/${app.id}/databases`, body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.details[0].field, field, r.text);
  }
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/databases`)).body.items, []);
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/env`)).body.items, []);
});

test('scheduler (fake clock): fires on its slot once, and catches up once after downtime', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await newApp(c, apps, 'bt');
  await appVolume(app, 'files', 'echo hi > /v/f');
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'volume', volume: 'files' },
    schedule: '*/5 * * * *',
    keep_last: 10,
  });
  assert.equal(cfg.status, 201, cfg.text);
  const bid = cfg.body.backup.id;
  const created = Date.parse(cfg.body.backup.created_at);
  const slot = Math.floor(created / 300_000) * 300_000 + 300_000;
  const count = async () =>
    (await c.req('GET', `/api/apps/${app.id}/backups/${bid}/runs`)).body.items.filter(
      (r: any) => r.trigger === 'schedule',
    ).length;
  const mine = (ids: string[]) => ids.filter((id) => id === bid);

  assert.deepEqual(mine(await runDue(s.env, slot - 1000)), []);
  assert.deepEqual(mine(await runDue(s.env, slot)), [bid]);
  await settleJobs();
  assert.deepEqual(mine(await runDue(s.env, slot + 1000)), []);
  assert.equal(await count(), 1);
  // Down for an hour: twelve slots missed, one run at "boot", and a second boot runs none.
  assert.deepEqual(mine(await runDue(s.env, slot + 3_600_000 + 5_000)), [bid]);
  await settleJobs();
  assert.deepEqual(mine(await runDue(s.env, slot + 3_600_000 + 5_000)), []);
  assert.equal(await count(), 2);
  const runs = (await c.req('GET', `/api/apps/${app.id}/backups/${bid}/runs`)).body.items;
  assert.ok(
    runs.every((r: any) => r.status === 'succeeded'),
    JSON.stringify(runs),
  );
});

test('a run the process died during ends interrupted at boot; its partial artifact goes, older ones stay', async () => {
  const app = await newApp(c, apps, 'bt');
  const cfg = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'volume', volume: 'gone' },
    schedule: '0 3 * * *',
    keep_last: 3,
  });
  assert.equal(cfg.status, 201, cfg.text);
  const bid = cfg.body.backup.id;
  const dir = join(s.dataDir, 'backups', app.id);
  await mkdir(dir, { recursive: true });
  const { oldId, deadId } = await insertDeadRun(s.env.db, app.id, bid, 'manual');
  await writeFile(join(dir, `${oldId}.svcbak`), 'old');
  await writeFile(join(dir, `${deadId}.svcbak.part`), 'partial');
  await recoverRuns(s.env);
  const runs = (await c.req('GET', `/api/apps/${app.id}/backups/${bid}/runs`)).body.items;
  const dead = runs.find((r: any) => r.id === deadId);
  assert.equal(dead.status, 'interrupted');
  assert.ok(dead.error);
  await assert.rejects(stat(join(dir, `${deadId}.svcbak.part`)));
  assert.equal(await readFile(join(dir, `${oldId}.svcbak`), 'utf8'), 'old');
});
