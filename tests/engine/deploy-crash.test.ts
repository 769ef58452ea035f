// The real server process (`node dist/runtime/cli.js serve`) stopped mid-deployment:
// - kill -9 mid-build: the next boot marks the deployment `interrupted`, removes what it
//   half-created, and the previous version still serves;
// - SIGTERM mid-build: a graceful stop marks the running deployment `interrupted` (cleaned up),
//   leaves the queued one queued, exits 0, and the next boot runs the queued one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveOn } from '../_support/cli.js';
import { needDocker, ensureBaseImage, dockerReachable, DOCKER_SOCKET } from '../_support/docker.js';
import { adminClient, type Client, type TestServer } from '../_support/server.js';
import { createEngine, listAppContainers, type Owner } from '#lib/docker/index.js';
import { until } from './_helpers.js';
import {
  startGitServer,
  webRepo,
  callInApp,
  waitStatus,
  cleanupApp,
  freePort,
  type GitServer,
} from './_deploy.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
let git: GitServer;
let child: ChildProcess | null = null;
const apps = new Set<string>();
const dirs: string[] = [];

before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  git = await startGitServer();
});

after(async () => {
  child?.kill('SIGKILL');
  for (const a of apps) await cleanupApp(engine, a);
  await git?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A data directory and a port for one server, kept across its restarts. */
async function instance(): Promise<{ dataDir: string; port: number }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-crash-'));
  dirs.push(dataDir);
  return { dataDir, port: await freePort() };
}

const serve = ({ dataDir, port }: { dataDir: string; port: number }) => serveOn(dataDir, port);

/** The instance id the served control plane keeps in its database: the objects it makes carry it. */
async function ownerOf(dataDir: string): Promise<Owner> {
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(join(dataDir, 'svc.db'), { readonly: true });
  try {
    const row = db.prepare("select value from settings where key = 'instance_id'").get() as { value: string };
    return { instanceId: row.value, adopted: new Set() };
  } finally {
    db.close();
  }
}

test('kill -9 mid-build, restart: the deployment is interrupted, its leftovers removed, the old version still serves', async (t) => {
  if (!(await needDocker(t))) return;
  const inst = await instance();
  const { dataDir } = inst;
  let srv = await serve(inst);
  engine.owner = await ownerOf(inst.dataDir);
  child = srv.proc;
  const fake = { url: srv.url, dataDir } as TestServer;
  let admin: Client = await adminClient(fake);
  const repo = `crash-${randomBytes(3).toString('hex')}`;
  await git.commit(repo, webRepo('old and steady'));
  const name = `crash-${randomBytes(3).toString('hex')}`;
  apps.add(name);
  const created = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(created.status, 201, created.text);
  const app = created.body.app;
  const patched = await admin.req('PATCH', `/api/apps/${app.id}/services/app`, {
    port: 8080,
    health_path: '/',
  });
  assert.equal(patched.status, 200, patched.text);
  const v1 = await deploy(admin, app.id);
  await waitStatus(admin, app.id, v1.id, ['succeeded']);
  const oldContainers = (await listAppContainers(engine, name)).map((c) => c.id);

  await git.commit(repo, webRepo('never', `RUN echo ${randomBytes(4).toString('hex')} && sleep 120`));
  const v2 = await deploy(admin, app.id);
  await until(
    'the slow build to run',
    async () => {
      const logs = (await admin.req('GET', `/api/apps/${app.id}/deployments/${v2.id}/logs`)).body.items as {
        line: string;
      }[];
      return logs.some((l) => /sleep 120/.test(l.line));
    },
    120_000,
    200,
  );
  srv.proc.kill('SIGKILL');
  await new Promise((r) => srv.proc.once('exit', r));
  child = null;

  srv = await serve(inst);
  child = srv.proc;
  admin = await adminClient({ url: srv.url, dataDir } as TestServer);
  const d = await waitStatus(admin, app.id, v2.id, ['interrupted'], 60_000);
  assert.match(d.error, /stopped while/);
  assert.equal(await callInApp(engine, name, 'http://app:8080/'), 'old and steady\n');
  assert.deepEqual(
    (await listAppContainers(engine, name)).map((c) => c.id),
    oldContainers,
  );
  assert.deepEqual(
    (await readdir(join(dataDir, 'work', app.id))).filter((n) => n.startsWith('.clone-')),
    [],
  );
  const logs = (await admin.req('GET', `/api/apps/${app.id}/deployments/${v2.id}/logs`)).body.items as {
    line: string;
  }[];
  assert.ok(logs.some((l) => /^interrupted/.test(l.line)));
  // The app is deployable again.
  await git.commit(repo, webRepo('after the crash'));
  const v3 = await deploy(admin, app.id);
  await waitStatus(admin, app.id, v3.id, ['succeeded']);
  assert.equal(await callInApp(engine, name, 'http://app:8080/'), 'after the crash\n');
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.once('exit', r));
  child = null;
});

async function deploy(admin: Client, appId: string): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return r.body.deployment;
}

/** Resolves with how the process ended. */
function exited(proc: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null)
    return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((r) => proc.once('exit', (code, signal) => r({ code, signal })));
}

test('SIGTERM mid-build: graceful stop, the running deployment interrupted and cleaned up, the queued one run by the next boot', async (t) => {
  if (!(await needDocker(t))) return;
  const inst = await instance();
  let srv = await serve(inst);
  engine.owner = await ownerOf(inst.dataDir);
  child = srv.proc;
  let admin = await adminClient({ url: srv.url, dataDir: inst.dataDir } as TestServer);
  const made: { id: string; name: string }[] = [];
  for (const [label, files] of [
    ['slow', webRepo('never served', `RUN echo ${randomBytes(4).toString('hex')} && sleep 120`)],
    ['queued', webRepo('served after the restart')],
  ] as const) {
    const repo = `term-${label}-${randomBytes(3).toString('hex')}`;
    await git.commit(repo, files);
    const name = `term-${randomBytes(3).toString('hex')}`;
    apps.add(name);
    const r = await admin.req('POST', '/api/apps', {
      name,
      source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
    });
    assert.equal(r.status, 201, r.text);
    const p = await admin.req('PATCH', `/api/apps/${r.body.app.id}/services/app`, {
      port: 8080,
      health_path: '/',
    });
    assert.equal(p.status, 200, p.text);
    made.push(r.body.app);
  }
  const [slow, later] = made as [{ id: string; name: string }, { id: string; name: string }];
  // Concurrency 1 (the default): the second app's deployment waits in the queue.
  const running = await deploy(admin, slow.id);
  await until(
    'the slow build to run',
    async () => {
      const logs = (await admin.req('GET', `/api/apps/${slow.id}/deployments/${running.id}/logs`)).body
        .items as { line: string }[];
      return logs.some((l) => /sleep 120/.test(l.line));
    },
    120_000,
    200,
  );
  const queued = await deploy(admin, later.id);
  const active = (await admin.req('GET', '/api/deployments/active')).body.items as {
    id: string;
    status: string;
  }[];
  assert.deepEqual(
    active.map((d) => [d.id, d.status]),
    [
      [running.id, 'building'],
      [queued.id, 'queued'],
    ],
  );

  srv.proc.kill('SIGTERM');
  const how = await exited(srv.proc);
  child = null;
  assert.deepEqual(how, { code: 0, signal: null }, 'a graceful stop exits 0');

  // What the stopped process left in its database, read directly.
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(join(inst.dataDir, 'svc.db'), { readonly: true });
  try {
    const rows = db
      .prepare('select id, status, error from deployments where id in (?, ?) order by id')
      .all(running.id, queued.id) as { id: string; status: string; error: string | null }[];
    assert.deepEqual(
      rows.map((r) => [r.id, r.status]),
      [
        [running.id, 'interrupted'],
        [queued.id, 'queued'],
      ],
    );
    assert.match(rows[0]!.error ?? '', /shutting down/);
  } finally {
    db.close();
  }
  assert.deepEqual(
    await listAppContainers(engine, slow.name),
    [],
    'the interrupted deployment left no container',
  );
  assert.deepEqual(
    await engine.docker.listImages({ filters: { label: [`svc.deployment=${running.id}`] } }),
    [],
    'nor an image',
  );

  srv = await serve(inst);
  child = srv.proc;
  admin = await adminClient({ url: srv.url, dataDir: inst.dataDir } as TestServer);
  const done = await waitStatus(admin, later.id, queued.id, ['succeeded']);
  assert.equal(done.status, 'succeeded');
  assert.equal(await callInApp(engine, later.name, 'http://app:8080/'), 'served after the restart\n');
  const interrupted = (await admin.req('GET', `/api/apps/${slow.id}/deployments/${running.id}`)).body
    .deployment;
  assert.equal(interrupted.status, 'interrupted');
  const logs = (await admin.req('GET', `/api/apps/${slow.id}/deployments/${running.id}/logs`)).body.items as {
    line: string;
  }[];
  assert.ok(
    logs.some((l) => /^interrupted: the control plane is shutting down/.test(l.line)),
    logs.map((l) => l.line).join('\n'),
  );
  srv.proc.kill('SIGTERM');
  assert.deepEqual(await exited(srv.proc), { code: 0, signal: null });
  child = null;
});
