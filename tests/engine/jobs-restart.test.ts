// The real server process (`node dist/runtime/cli.js serve`) stopped while runs are in flight,
// then started again on the same data directory:
// - kill -9 mid-run: the run goes on without the control plane; the next start follows it to its
//   end (its whole output, its exit code) and removes its container; a run whose container went
//   away meanwhile is recorded `interrupted`;
// - a job's due times that passed while the control plane was down are recorded `skipped`, saying so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveOn } from '../_support/cli.js';
import {
  needDocker,
  ensureBaseImage,
  dockerReachable,
  DOCKER_SOCKET,
  BASE_IMAGE,
} from '../_support/docker.js';
import { adminClient, type Client, type TestServer } from '../_support/server.js';
import { createEngine, listRunContainers, type Owner } from '#lib/docker/index.js';
import { until } from './_helpers.js';
import { waitStatus, cleanupApp, freePort } from './_deploy.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
let child: ChildProcess | null = null;
const apps = new Set<string>();
const dirs: string[] = [];

before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
});

after(async () => {
  child?.kill('SIGKILL');
  for (const a of apps) await cleanupApp(engine, a);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const serve = (dataDir: string, port: number) => serveOn(dataDir, port, { SVC_PROXY: 'off' });

function killed(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill('SIGKILL');
  });
}

/** Reads or writes the stopped server's database directly. */
async function withDb<T>(dataDir: string, fn: (db: import('better-sqlite3').Database) => T): Promise<T> {
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(join(dataDir, 'svc.db'));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

async function ownerOf(dataDir: string): Promise<Owner> {
  return withDb(dataDir, (db) => {
    const row = db.prepare("select value from settings where key = 'instance_id'").get() as { value: string };
    return { instanceId: row.value, adopted: new Set<string>() };
  });
}

async function deployedApp(admin: Client): Promise<{ id: string; name: string }> {
  const name = `jobr-${randomBytes(3).toString('hex')}`;
  apps.add(name);
  const compose = `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]\n`;
  const r = await admin.req('POST', '/api/apps', { name, source: { type: 'compose', compose } });
  assert.equal(r.status, 201, r.text);
  const d = await admin.req('POST', `/api/apps/${r.body.app.id}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(admin, r.body.app.id, d.body.deployment.id, ['succeeded']);
  return r.body.app;
}

test('kill -9 during runs, start again: a run that went on is followed to its end, one whose container went is interrupted, missed due times are skipped', async (t) => {
  if (!(await needDocker(t))) return;
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-jobs-restart-'));
  dirs.push(dataDir);
  const port = await freePort();
  let srv = await serve(dataDir, port);
  child = srv.proc;
  engine.owner = await ownerOf(dataDir);
  let admin = await adminClient({ url: srv.url, dataDir } as TestServer);
  const app = await deployedApp(admin);
  const job = await admin.req('POST', `/api/apps/${app.id}/jobs`, {
    name: 'outlives',
    schedule: '* * * * *',
    command: ['sh', '-c', 'echo before; sleep 6; echo after; exit 5'],
    concurrency: 'allow',
  });
  assert.equal(job.status, 201, job.text);
  const jid = job.body.job.id;
  const start = async () => {
    const r = await admin.req('POST', `/api/apps/${app.id}/jobs/${jid}/run`);
    assert.equal(r.status, 202, r.text);
    return r.body.run.id as string;
  };
  const survivor = await start();
  const lost = await start();
  const running = async (rid: string) =>
    (await admin.req('GET', `/api/apps/${app.id}/runs/${rid}`)).body.run.status === 'running';
  await until(
    'both runs to run',
    async () => (await running(survivor)) && (await running(lost)),
    60_000,
    200,
  );
  await until('the first line', async () =>
    (await admin.req('GET', `/api/apps/${app.id}/runs/${survivor}/logs`)).body.items.some(
      (l: any) => l.line === 'before',
    ),
  );

  await killed(srv.proc);
  child = null;
  // While it is down: one run's container disappears; the job's due times are three minutes behind.
  const gone = (await listRunContainers(engine)).find((c) => c.runId === lost)!;
  await engine.docker.getContainer(gone.id).remove({ force: true });
  const behind = new Date(Date.now() - 3 * 60_000 - 30_000).toISOString();
  await withDb(dataDir, (db) =>
    db.prepare('update jobs set last_scheduled_at = ? where id = ?').run(behind, jid),
  );

  srv = await serve(dataDir, port);
  child = srv.proc;
  admin = await adminClient({ url: srv.url, dataDir } as TestServer);
  const end = await until('the survivor to end', async () => {
    const r = (await admin.req('GET', `/api/apps/${app.id}/runs/${survivor}`)).body.run;
    return r.status === 'running' ? null : r;
  });
  assert.equal(end.status, 'failed');
  assert.equal(end.exit_code, 5);
  const out = (await admin.req('GET', `/api/apps/${app.id}/runs/${survivor}/logs`)).body.items as any[];
  assert.deepEqual(
    out.filter((l) => l.stream === 'stdout').map((l) => l.line),
    ['before', 'after'],
    'the whole output, once',
  );
  assert.ok(out.some((l) => l.stream === 'system' && /started again/.test(l.line)));
  const lostRun = (await admin.req('GET', `/api/apps/${app.id}/runs/${lost}`)).body.run;
  assert.equal(lostRun.status, 'interrupted');
  assert.match(lostRun.reason, /container was gone/);
  await until(
    'no run container left',
    async () => !(await listRunContainers(engine)).some((c) => c.runId === survivor || c.runId === lost),
  );
  const runs = (await admin.req('GET', `/api/apps/${app.id}/jobs/${jid}/runs`)).body.items as any[];
  const missed = runs.filter((r) => r.trigger === 'schedule' && r.status === 'skipped');
  assert.ok(missed.length >= 3, `due times missed while down are recorded: ${JSON.stringify(runs)}`);
  assert.ok(missed.every((r) => /the control plane was not running at /.test(r.reason)));
  assert.equal(
    new Set(runs.map((r) => r.scheduled_for).filter(Boolean)).size,
    runs.filter((r) => r.scheduled_for).length,
  );
  await admin.req('PATCH', `/api/apps/${app.id}/jobs/${jid}`, { enabled: false });
});
