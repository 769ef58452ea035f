// Step-up on the backup changes that cost artifacts: a PATCH that lowers keep_last (the next run
// deletes the older artifacts) or moves the destination or the source needs one, as DELETE of the
// config does; the rest of a PATCH does not. DELETE of one run's artifact (step-up, audited): the
// artifact leaves its destination (local and S3), the run stays marked removed and answers 410.
// Real server, real engine (volume backups), real S3 server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startTestServer, adminClient, apiToken, Client, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { startS3, S3_KEY, type S3Server } from '../_support/s3.js';
import { newApp, runBackup, stepUp, stopDataServer } from './_data.js';
import { LABEL_APP, LABEL_MANAGED, LABEL_VOLUME } from '#lib/docker/index.js';
import { runningRow } from '#lib/backups/run.js';
import { getConfig } from '#lib/backups/store.js';

let s: TestServer;
let up: Client;
let plain: Client;
let s3: S3Server;
const apps: string[] = [];
const PREFIX = 'svc/ops';

before(async () => {
  s = await startTestServer();
  up = await adminClient(s);
  // A second session of the same operator that never stepped up.
  plain = await adminClient(s);
  s3 = await startS3();
});
after(async () => {
  await stopDataServer(s, apps);
  await s3?.stop();
});

const s3Dest = (extra: object = {}) => ({
  type: 's3',
  endpoint: s3.endpoint,
  region: 'us-east-1',
  bucket: s3.bucket,
  prefix: PREFIX,
  access_key_id: S3_KEY.id,
  path_style: true,
  ...extra,
});

test('PATCH a backup: lowering keep_last or changing destination or source needs a step-up; the rest does not', async () => {
  const app = await newApp(up, apps, 'bp');
  const base = {
    source: { type: 'volume', volume: 'data' },
    schedule: '0 3 * * *',
    keep_last: 7,
    enabled: true,
    verify_after_run: false,
    destination: { type: 'local' },
  };
  const made = await up.req('POST', `/api/apps/${app.id}/backups`, base);
  assert.equal(made.status, 201, made.text);
  const path = `/api/apps/${app.id}/backups/${made.body.backup.id}`;
  const token = await apiToken(up, 'backup-patch');
  const bearer = new Client(s.url);
  bearer.bearer = token;
  const current = async () => {
    const { last_run: _l, updated_at: _u, ...rest } = (await up.req('GET', path)).body.backup;
    return rest;
  };
  const reset = async (to: object) => {
    await stepUp(up);
    const r = await up.req('PATCH', path, to);
    assert.equal(r.status, 200, r.text);
  };

  const guarded: Array<[string, object, object]> = [
    ['lower keep_last', { keep_last: 3 }, { keep_last: 7 }],
    ['local to s3', { destination: s3Dest({ secret_access_key: 'k1' }) }, { destination: { type: 'local' } }],
    ['another source', { source: { type: 'volume', volume: 'other' } }, { source: base.source }],
  ];
  for (const [what, change, back] of guarded) {
    const before = await current();
    for (const who of [plain, bearer]) {
      const r = await who.req('PATCH', path, change);
      assert.equal(r.status, 403, `${what}: ${r.text}`);
      assert.equal(r.body.code, 'step_up_required');
      assert.deepEqual(await current(), before, `${what} was applied without a step-up`);
    }
    await stepUp(up);
    const r = await up.req('PATCH', path, change);
    assert.equal(r.status, 200, `${what}: ${r.text}`);
    assert.notDeepEqual(await current(), before);
    await reset(back);
  }

  // On an S3 destination: another prefix, or another secret for the same place, is a change.
  await reset({ destination: s3Dest({ secret_access_key: 'k1' }) });
  for (const [what, change] of [
    ['another prefix', { destination: s3Dest({ prefix: 'elsewhere' }) }],
    ['a new secret', { destination: s3Dest({ secret_access_key: 'k2' }) }],
  ] as const) {
    const r = await plain.req('PATCH', path, change);
    assert.equal(r.status, 403, `${what}: ${r.text}`);
    assert.equal(r.body.code, 'step_up_required');
    await stepUp(up);
    assert.equal((await up.req('PATCH', path, change)).status, 200, what);
    await reset({ destination: s3Dest() });
  }

  // No step-up: raising keep_last, the schedule, enabled, verify_after_run, and the destination
  // and source given again as they are.
  const free: object[] = [
    { keep_last: 9 },
    { keep_last: 9 },
    { schedule: '30 4 * * *' },
    { enabled: false },
    { verify_after_run: true },
    { destination: s3Dest(), source: base.source },
    { keep_last: 10, schedule: '0 5 * * 1', enabled: true, verify_after_run: false },
  ];
  for (const change of free) {
    for (const who of [plain, bearer]) {
      const r = await who.req('PATCH', path, change);
      assert.equal(r.status, 200, `${JSON.stringify(change)}: ${r.text}`);
    }
  }
  const after = await current();
  assert.equal(after.keep_last, 10);
  assert.equal(after.schedule, '0 5 * * 1');
});

/** An app volume as a deploy makes it, holding one file. */
async function appVolume(app: { name: string }, key: string): Promise<void> {
  const name = `svc-${app.name}_${key}`;
  await s.env.engine.docker.createVolume({
    Name: name,
    Labels: { [LABEL_MANAGED]: 'true', [LABEL_APP]: app.name, [LABEL_VOLUME]: key },
  });
  const ct = await s.env.engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sh', '-c', 'echo hello > /v/f'],
    HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: name, Target: '/v' }] },
  });
  try {
    await ct.start();
    assert.equal((await ct.wait()).StatusCode, 0);
  } finally {
    await ct.remove({ force: true, v: true });
  }
}

async function s3Keys(appId: string): Promise<string[]> {
  const r = await s3.client.send(
    new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/${appId}/` }),
  );
  return (r.Contents ?? []).map((o) => o.Key!).sort();
}

test('DELETE a run: its artifact leaves the destination (local and S3), the run stays marked removed; step-up, 404, 409, audited', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await newApp(up, apps, 'bx');
  const other = await newApp(up, apps, 'bx');
  await appVolume(app, 'data');
  const make = async (destination: object) => {
    const r = await up.req('POST', `/api/apps/${app.id}/backups`, {
      source: { type: 'volume', volume: 'data' },
      schedule: '0 3 * * *',
      keep_last: 5,
      destination,
    });
    assert.equal(r.status, 201, r.text);
    return r.body.backup.id as string;
  };
  const local = await make({ type: 'local' });
  const remote = await make(s3Dest({ secret_access_key: 'k' }));
  const runs = [];
  for (const bid of [local, local, remote]) {
    const r = await runBackup(up, app.id, bid, { timeoutMs: 120_000, everyMs: 300 });
    assert.equal(r.status, 'succeeded', r.error);
    runs.push(r);
  }
  const [l1, l2, r1] = runs;
  const file = (rid: string) => join(s.dataDir, 'backups', app.id, `${rid}.svcbak`);
  const del = (who: Client, appId: string, rid: string) =>
    who.req('DELETE', `/api/apps/${appId}/backups/runs/${rid}`);

  // Without a step-up: refused, the artifact stays.
  const refused = await del(plain, app.id, l1.id);
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.code, 'step_up_required');
  await stat(file(l1.id));
  // Through another app's path: no such run, the artifact stays.
  await stepUp(up);
  const foreign = await del(up, other.id, l1.id);
  assert.equal(foreign.status, 404, foreign.text);
  await stat(file(l1.id));

  const gone = await del(up, app.id, l1.id);
  assert.equal(gone.status, 204, gone.text);
  await assert.rejects(stat(file(l1.id)));
  const row = (await up.req('GET', `/api/apps/${app.id}/backups/runs/${l1.id}`)).body.run;
  assert.equal(row.status, 'succeeded');
  assert.equal(row.artifact_removed, true);
  assert.equal((await up.req('GET', `/api/apps/${app.id}/backups/runs/${l1.id}/download`)).status, 410);
  assert.equal((await up.req('POST', `/api/apps/${app.id}/backups/runs/${l1.id}/restore`)).status, 410);
  assert.equal((await up.req('GET', `/api/apps/${app.id}/backups/runs/${l2.id}/download`)).status, 200);
  assert.equal((await del(up, app.id, l1.id)).status, 204);
  const audit = (
    await up.req(
      'GET',
      `/api/audit?action=${encodeURIComponent('DELETE /api/apps/{id}/backups/runs/')}&target=${app.id}`,
    )
  ).body.items;
  assert.ok(
    audit.some((e: any) => e.outcome === 'ok' && JSON.stringify(e).includes(l1.id)),
    JSON.stringify(audit),
  );

  // S3: the object leaves the bucket.
  assert.deepEqual(await s3Keys(app.id), [`${PREFIX}/${app.id}/${r1.id}.svcbak`]);
  assert.equal((await del(plain, app.id, r1.id)).status, 403);
  assert.equal((await s3Keys(app.id)).length, 1);
  const s3gone = await del(up, app.id, r1.id);
  assert.equal(s3gone.status, 204, s3gone.text);
  assert.deepEqual(await s3Keys(app.id), []);
  assert.equal(
    (await up.req('GET', `/api/apps/${app.id}/backups/runs/${r1.id}`)).body.run.artifact_removed,
    true,
  );
  assert.equal((await up.req('GET', `/api/apps/${app.id}/backups/runs/${r1.id}/download`)).status, 410);

  // A run still running: 409, its row untouched.
  const rid = '0'.repeat(25) + '9';
  const cfg = await getConfig(s.env.db, app.id, local);
  await s.env.db
    .insertInto('backup_runs')
    .values(runningRow(cfg, rid, 'manual', new Date().toISOString()))
    .execute();
  const busy = await del(up, app.id, rid);
  assert.equal(busy.status, 409, busy.text);
  assert.equal(busy.body.code, 'conflict');
  assert.equal(
    (await up.req('GET', `/api/apps/${app.id}/backups/runs/${rid}`)).body.run.artifact_removed,
    false,
  );
  await s.env.db.deleteFrom('backup_runs').where('id', '=', rid).execute();
});
