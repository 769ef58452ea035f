// kill -9 of the real server process mid-build: the next boot marks the deployment
// `interrupted`, removes what it half-created, and the previous version still serves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { needDocker, ensureBaseImage, dockerReachable, DOCKER_SOCKET } from '../_support/docker.js';
import { adminClient, TEST_MASTER_KEY, type Client, type TestServer } from '../_support/server.js';
import { createEngine, listAppContainers } from '../../lib/docker/index.js';
import { until } from './_helpers.js';
import { startGitServer, webRepo, callInApp, waitStatus, cleanupApp, freePort, type GitServer } from './_deploy.js';

const CLI = fileURLToPath(new URL('../../runtime/cli.js', import.meta.url));
const engine = createEngine({ socketPath: DOCKER_SOCKET });
let git: GitServer;
let dataDir: string;
let port: number;
let child: ChildProcess | null = null;
const apps = new Set<string>();

before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  git = await startGitServer();
  dataDir = await mkdtemp(join(tmpdir(), 'svc-crash-'));
  port = await freePort();
});

after(async () => {
  child?.kill('SIGKILL');
  for (const a of apps) await cleanupApp(engine, a);
  await git?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function serve(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME,
      SVC_DATA_DIR: dataDir, SVC_HOST: '127.0.0.1', SVC_PORT: String(port), SVC_MASTER_KEY: TEST_MASTER_KEY,
      SVC_PASSWORD_COST: '14', SVC_AUTH_RATE_LIMIT: '1000', SVC_LOG_LEVEL: 'warn', SVC_DOCKER_SOCKET: DOCKER_SOCKET,
      SVC_ACCESS_LOG: join(dataDir, 'access.log'), SVC_SECURITY_DIR: join(dataDir, 'security'),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await until('the server to answer', async () => (await fetch(`${url}/api/health`).catch(() => null))?.ok, 60_000, 200);
  return { url, proc };
}

test('kill -9 mid-build, restart: the deployment is interrupted, its leftovers removed, the old version still serves', async (t) => {
  if (!(await needDocker(t))) return;
  let srv = await serve();
  child = srv.proc;
  const fake = { url: srv.url, dataDir } as TestServer;
  let admin: Client = await adminClient(fake);
  const repo = `crash-${randomBytes(3).toString('hex')}`;
  await git.commit(repo, webRepo('old and steady'));
  const name = `crash-${randomBytes(3).toString('hex')}`;
  apps.add(name);
  const created = await admin.req('POST', '/api/apps', { name, source: { type: 'git', repo_url: git.url(repo), branch: 'main' } });
  assert.equal(created.status, 201, created.text);
  const app = created.body.app;
  const patched = await admin.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' });
  assert.equal(patched.status, 200, patched.text);
  const v1 = (await admin.req('POST', `/api/apps/${app.id}/deployments`, {})).body.deployment;
  await waitStatus(admin, app.id, v1.id, ['succeeded']);
  const oldContainers = (await listAppContainers(engine, name)).map((c) => c.id);

  await git.commit(repo, webRepo('never', `RUN echo ${randomBytes(4).toString('hex')} && sleep 120`));
  const v2 = (await admin.req('POST', `/api/apps/${app.id}/deployments`, {})).body.deployment;
  await until('the slow build to run', async () => {
    const logs = (await admin.req('GET', `/api/apps/${app.id}/deployments/${v2.id}/logs`)).body.items as { line: string }[];
    return logs.some((l) => /sleep 120/.test(l.line));
  }, 120_000, 200);
  srv.proc.kill('SIGKILL');
  await new Promise((r) => srv.proc.once('exit', r));
  child = null;

  srv = await serve();
  child = srv.proc;
  admin = await adminClient({ url: srv.url, dataDir } as TestServer);
  const d = await waitStatus(admin, app.id, v2.id, ['interrupted'], 60_000);
  assert.match(d.error, /stopped while/);
  assert.equal(await callInApp(engine, name, 'http://app:8080/'), 'old and steady\n');
  assert.deepEqual((await listAppContainers(engine, name)).map((c) => c.id), oldContainers);
  assert.deepEqual((await readdir(join(dataDir, 'work', app.id))).filter((n) => n.startsWith('.clone-')), []);
  const logs = (await admin.req('GET', `/api/apps/${app.id}/deployments/${v2.id}/logs`)).body.items as { line: string }[];
  assert.ok(logs.some((l) => /^interrupted/.test(l.line)));
  // The app is deployable again.
  await git.commit(repo, webRepo('after the crash'));
  const v3 = (await admin.req('POST', `/api/apps/${app.id}/deployments`, {})).body.deployment;
  await waitStatus(admin, app.id, v3.id, ['succeeded']);
  assert.equal(await callInApp(engine, name, 'http://app:8080/'), 'after the crash\n');
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.once('exit', r));
  child = null;
});
