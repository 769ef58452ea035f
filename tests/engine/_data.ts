// Helpers for the data tests (databases and backups): a server whose catalog images map to the
// local database images, apps with a database, and the API's asynchronous backup, restore and
// verify calls waited on until they settle.
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { startTestServer, ADMIN, reveal, type Client, type TestServer } from '../_support/server.js';
import { ensureDbImages, type DbEngine, type DbImages } from '../_support/dbimages.js';
import { BASE_IMAGE } from '../_support/docker.js';
import { until } from './_helpers.js';
import { ENGINES } from '#lib/databases/engines/index.js';
import { deleteApp } from '#lib/apps/ops.js';
import { settleJobs } from '#lib/backups/jobs.js';
import type { Database } from '#lib/db/schema.js';

/** SVC_IMAGE_MAP's value: every catalog reference of these engines to its local image. */
export function dbImageMap(img: DbImages, engines: readonly DbEngine[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (const e of engines) for (const ref of Object.values(ENGINES[e].spec.images)) map[ref] = img[e];
  return map;
}

/** The images are built (or found) once here; each test still gates on needDbImages. */
export async function startDataServer(engines: readonly DbEngine[]): Promise<TestServer> {
  const img = await ensureDbImages().catch(() => null);
  return startTestServer(img ? { SVC_IMAGE_MAP: JSON.stringify(dbImageMap(img, engines)) } : {});
}

/** Lets running backup jobs end before the apps (and their volumes) and the server go. */
export async function stopDataServer(s: TestServer, apps: readonly string[]): Promise<void> {
  await settleJobs();
  for (const id of apps)
    await deleteApp(s.env, id, { volumes: true }).catch((e) => console.error('cleanup', e));
  await s.stop();
}

/** An image app named `<prefix>-<random>`; its id goes on `apps` for the clean-up. */
export async function newApp(
  c: Client,
  apps: string[],
  prefix: string,
): Promise<{ id: string; name: string }> {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: BASE_IMAGE } });
  assert.equal(r.status, 201, r.text);
  apps.push(r.body.app.id);
  return r.body.app;
}

/** POSTs a database; the answer's database row, still provisioning. */
export async function addDatabase(c: Client, appId: string, engine: string, version: string): Promise<any> {
  const r = await c.req('POST', `/api/apps/${appId}/databases`, { engine, version });
  assert.equal(r.status, 202, r.text);
  return r.body.database;
}

/** Waits for a database to be ready; its provisioning error is thrown as it is. */
export function dbReady(c: Client, appId: string, engine: string, dbId: string): Promise<any> {
  return until(
    `${engine} ready`,
    async () => {
      const d = (await c.req('GET', `/api/apps/${appId}/databases`)).body.items.find(
        (x: any) => x.id === dbId,
      );
      if (d.status === 'error') throw new Error(d.error);
      return d.status === 'ready' ? d : null;
    },
    300_000,
    1000,
  );
}

export async function provisionDb(c: Client, appId: string, engine: string, version: string): Promise<any> {
  return dbReady(c, appId, engine, (await addDatabase(c, appId, engine, version)).id);
}

/** The output of a container's logs without the engine's 8-byte frame headers. */
export function demux(buf: Buffer): string {
  let out = '';
  let i = 0;
  while (i + 8 <= buf.length) {
    const n = buf.readUInt32BE(i + 4);
    out += buf.subarray(i + 8, i + 8 + n).toString();
    i += 8 + n;
  }
  return out;
}

/**
 * Runs a client container on the app's network, as the app reaches its database; its output,
 * trimmed, once it exited 0.
 */
export async function runInAppNetwork(
  s: TestServer,
  app: { name: string },
  image: string,
  entrypoint: string[],
  env?: string[],
): Promise<string> {
  const ct = await s.env.engine.docker.createContainer({
    Image: image,
    Entrypoint: entrypoint,
    Env: env,
    User: '999',
    Labels: { 'svc.test.data': app.name },
    HostConfig: { NetworkMode: `svc-${app.name}` },
  });
  try {
    await ct.start();
    const res = await ct.wait();
    const out = demux((await ct.logs({ stdout: true, stderr: true })) as Buffer);
    assert.equal(res.StatusCode, 0, out);
    return out.trim();
  } finally {
    await ct.remove({ force: true, v: true });
  }
}

/** Runs SQL with psql through the app's DATABASE_URL. */
export async function psql(
  s: TestServer,
  c: Client,
  app: { id: string; name: string },
  image: string,
  sql: string,
): Promise<string> {
  const url = (await reveal(c, app.id, 'DATABASE_URL')).body.value as string;
  return runInAppNetwork(s, app, image, ['psql', url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql]);
}

export async function stepUp(c: Client): Promise<void> {
  const r = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(r.status, 200, r.text);
}

interface Wait {
  timeoutMs?: number;
  everyMs?: number;
}

/** Starts a run of a backup config; the run once `settled` (by default: no longer running). */
export async function runBackup(
  c: Client,
  appId: string,
  bid: string,
  {
    timeoutMs = 300_000,
    everyMs = 500,
    settled = (r: any) => r.status !== 'running',
  }: Wait & { settled?: (run: any) => boolean } = {},
): Promise<any> {
  const r = await c.req('POST', `/api/apps/${appId}/backups/${bid}/run`);
  assert.equal(r.status, 202, r.text);
  return until(
    'backup run',
    async () => {
      const x = await c.req('GET', `/api/apps/${appId}/backups/runs/${r.body.run.id}`);
      return settled(x.body.run) ? x.body.run : null;
    },
    timeoutMs,
    everyMs,
  );
}

/**
 * Retention runs right after a run is recorded as succeeded (so a failure there never costs the
 * new artifact): wait until it has marked `rid`'s artifact removed.
 */
export function retentionApplied(c: Client, appId: string, rid: string, timeoutMs = 60_000): Promise<any> {
  return until(
    'retention',
    async () => {
      const x = await c.req('GET', `/api/apps/${appId}/backups/runs/${rid}`);
      return x.body.run?.artifact_removed === true ? x.body.run : null;
    },
    timeoutMs,
    200,
  );
}

/** Steps up, restores a run; the restore once it is no longer running. */
export async function restoreRun(
  c: Client,
  appId: string,
  rid: string,
  { timeoutMs = 300_000, everyMs = 500 }: Wait = {},
): Promise<any> {
  await stepUp(c);
  const r = await c.req('POST', `/api/apps/${appId}/backups/runs/${rid}/restore`);
  assert.equal(r.status, 202, r.text);
  return until(
    'restore',
    async () => {
      const x = await c.req('GET', `/api/apps/${appId}/backups/restores/${r.body.restore.id}`);
      return x.body.restore.status === 'running' ? null : x.body.restore;
    },
    timeoutMs,
    everyMs,
  );
}

/** Verifies a run; the run once it has a verdict (verified_at or verify_error). */
export async function verifyRun(
  c: Client,
  appId: string,
  rid: string,
  { timeoutMs = 300_000, everyMs = 1000 }: Wait = {},
): Promise<any> {
  const r = await c.req('POST', `/api/apps/${appId}/backups/runs/${rid}/verify`);
  assert.equal(r.status, 202, r.text);
  return until(
    'verify',
    async () => {
      const x = await c.req('GET', `/api/apps/${appId}/backups/runs/${rid}`);
      return x.body.run.verified_at || x.body.run.verify_error ? x.body.run : null;
    },
    timeoutMs,
    everyMs,
  );
}

/**
 * The run rows a kill -9 leaves: an older run that succeeded, and one still "running" whose
 * process is gone. Their artifacts (files or objects) are the caller's to lay down.
 */
export async function insertDeadRun(
  db: Kysely<Database>,
  appId: string,
  bid: string,
  deadTrigger: 'manual' | 'schedule',
): Promise<{ oldId: string; deadId: string }> {
  const now = new Date().toISOString();
  const oldId = '0'.repeat(25) + '1';
  const deadId = '0'.repeat(25) + '2';
  const row = {
    backup_id: bid,
    app_id: appId,
    artifact_removed: 0,
    error: null,
    verified_at: null,
    verify_error: null,
    started_at: now,
  };
  await db
    .insertInto('backup_runs')
    .values([
      {
        ...row,
        id: oldId,
        status: 'succeeded',
        trigger: 'manual',
        artifact: `${appId}/${oldId}.svcbak`,
        size_bytes: 3,
        sha256: 'x',
        finished_at: now,
      },
      {
        ...row,
        id: deadId,
        status: 'running',
        trigger: deadTrigger,
        artifact: `${appId}/${deadId}.svcbak`,
        size_bytes: null,
        sha256: null,
        finished_at: null,
      },
    ])
    .execute();
  return { oldId, deadId };
}
