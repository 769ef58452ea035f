// The engine failing under a running control plane, against the real engine: the server talks
// to Docker through a unix-socket proxy this file controls (tests/_support/engine-proxy.ts), so
// its event stream can break, the engine can go away or stop answering mid-deployment, while
// dockerd itself (shared) keeps running and the test checks the truth on it directly.
// Also the deployment reaper (SVC_DEPLOY_TIMEOUT), with a short interval injected for the test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  needDocker,
  ensureBaseImage,
  dockerReachable,
  BASE_IMAGE,
  DOCKER_SOCKET,
} from '../_support/docker.js';
import { startEngineProxy, type EngineProxy } from '../_support/engine-proxy.js';
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { createEngine, listAppContainers } from '#lib/docker/index.js';
import { until } from './_helpers.js';
import { startGitServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

const direct = createEngine({ socketPath: DOCKER_SOCKET });
let proxy: EngineProxy | undefined;
let s: TestServer | undefined;
let admin: Client;
let git: GitServer | undefined;
const apps = new Set<string>();
const DEFAULT_TIMEOUT = 3_600_000;

// Without an engine every test skips (or fails under CI) through needDocker; nothing is set up.
before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  git = await startGitServer();
  proxy = await startEngineProxy();
  s = await startTestServer(
    { SVC_DOCKER_SOCKET: proxy.socketPath },
    {
      deploy: {
        healthTimeoutMs: 120_000,
        settleMs: 1_500,
        reaperEveryMs: 200,
        timeoutMs: DEFAULT_TIMEOUT,
        reapGraceMs: 10_000,
      },
    },
  );
  admin = await adminClient(s);
  // Reads the server's objects directly: as that instance.
  direct.owner = s.env.engine.owner;
});

after(async () => {
  await proxy?.restore();
  proxy?.stall(false);
  if (s) {
    for (const a of apps) await cleanupApp(direct, a);
    await s.stop();
  }
  await proxy?.close();
  await git?.stop();
});

const uniq = () => randomBytes(3).toString('hex');

/** A web app whose new containers take ten minutes to answer: its deployments sit in the gate. */
function slowToStart(content: string): Record<string, string> {
  return {
    'index.html': `${content}\n`,
    Dockerfile:
      [
        `FROM ${BASE_IMAGE}`,
        `RUN echo ${uniq()}`,
        'COPY index.html /www/index.html',
        'EXPOSE 8080',
        `CMD ["sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait; httpd -f -p 8080 -h /www"]`,
      ].join('\n') + '\n',
  };
}

/** An app at version one, serving, deployed through the proxy. */
async function servingApp(label: string): Promise<{ id: string; name: string; repo: string }> {
  const repo = `${label}-${uniq()}`;
  await git!.commit(repo, webRepo('version one'));
  const name = `${label}-${uniq()}`;
  apps.add(name);
  const r = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  const p = await admin.req('PATCH', `/api/apps/${r.body.app.id}/services/app`, {
    port: 8080,
    health_path: '/',
  });
  assert.equal(p.status, 200, p.text);
  const d = await deploy(r.body.app.id);
  await waitStatus(admin, r.body.app.id, d.id, ['succeeded']);
  assert.equal(await callInApp(direct, name, 'http://app:8080/'), 'version one\n');
  return { id: r.body.app.id, name, repo };
}

async function deploy(appId: string): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return r.body.deployment;
}

async function appStatus(appId: string): Promise<string> {
  const r = await admin.req('GET', `/api/apps/${appId}`);
  assert.equal(r.status, 200, r.text);
  return r.body.app.status;
}

async function logText(appId: string, depId: string): Promise<string> {
  return (
    (await admin.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`)).body.items as { line: string }[]
  )
    .map((l) => l.line)
    .join('\n');
}

/** What a deployment left on the engine, asked of dockerd directly. */
async function leftovers(depId: string): Promise<{ containers: number; images: number }> {
  const containers = await direct.docker.listContainers({
    all: true,
    filters: { label: [`svc.deployment=${depId}`] },
  });
  const images = await direct.docker.listImages({ filters: { label: [`svc.deployment=${depId}`] } });
  return { containers: containers.length, images: images.length };
}

test('the event stream breaks; while it is down a container stops; after the reconnect the app status is right', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await servingApp('evt');
  await until('the app to be running', async () => (await appStatus(app.id)) === 'running', 60_000, 200);
  await until('the event follower to be connected', async () => proxy!.eventStreams() > 0, 60_000, 100);
  const seen: string[] = [];
  const off = s!.env.bus.onAny((e) => {
    const d = e.data as { app?: string; type?: string; action?: string };
    if (e.topic === 'apps' && d.app === app.name && d.type === 'container') seen.push(d.action ?? '');
  });
  try {
    const streams = proxy!.eventStreams();
    proxy!.refuseEvents(true);
    proxy!.cutEvents();
    // While the stream is down, the container stops (behind the control plane's back).
    const [c] = await listAppContainers(direct, app.name);
    assert.ok(c);
    await direct.docker.getContainer(c.id).stop({ t: 2 });
    proxy!.refuseEvents(false);
    await until('the follower to reconnect', async () => proxy!.eventStreams() > streams, 60_000, 100);
    await until(
      'the stop to reach the app status',
      async () => (await appStatus(app.id)) === 'stopped',
      60_000,
      200,
    );
    assert.ok(
      seen.includes('die') || seen.includes('stop'),
      `the missed events were replayed: ${seen.join(', ')}`,
    );
    // The new stream is live: a start now is seen as it happens.
    await direct.docker.getContainer(c.id).start();
    await until(
      'the start to reach the app status',
      async () => (await appStatus(app.id)) === 'running',
      60_000,
      200,
    );
  } finally {
    off();
    proxy!.refuseEvents(false);
  }
});

test('the engine goes away mid-build: the deployment fails with a readable reason, the old version serves; when it is back, status and deploys are right', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await servingApp('gone-build');
  await git!.commit(app.repo, webRepo('never served', `RUN echo ${uniq()} && sleep 120`), 'slow build');
  const d = await deploy(app.id);
  await until(
    'the slow build to run',
    async () => /sleep 120/.test(await logText(app.id, d.id)),
    120_000,
    200,
  );
  await proxy!.cut();
  let failed: any;
  try {
    failed = await waitStatus(admin, app.id, d.id, ['failed'], 120_000);
    assert.match(failed.error, /^Docker engine unavailable at unix:\/\/\S+ \(E[A-Z]+\)$/, failed.error);
    assert.equal(
      await callInApp(direct, app.name, 'http://app:8080/'),
      'version one\n',
      'the old version keeps serving',
    );
    // While the engine is away, the API still answers about deployments.
    assert.equal((await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}`)).status, 200);
  } finally {
    await proxy!.restore();
  }
  await until(
    'the app status to be right again',
    async () => (await appStatus(app.id)) === 'running',
    60_000,
    250,
  );
  await until(
    'the build leftovers to be gone',
    async () => {
      const l = await leftovers(d.id);
      return l.containers === 0 && l.images === 0;
    },
    60_000,
    250,
  );
  await git!.commit(app.repo, webRepo('version three'));
  const next = await deploy(app.id);
  await waitStatus(admin, app.id, next.id, ['succeeded']);
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'version three\n');
});

test('the engine goes away during the health check: failed with a readable reason, the old version serves, the half-made container is removed once it is back', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await servingApp('gone-gate');
  await git!.commit(app.repo, slowToStart('never served'), 'slow to start');
  const d = await deploy(app.id);
  await waitStatus(admin, app.id, d.id, ['health_checking']);
  assert.equal((await leftovers(d.id)).containers, 1, 'the new container runs, waiting for its gate');
  await proxy!.cut();
  try {
    const failed = await waitStatus(admin, app.id, d.id, ['failed'], 120_000);
    assert.match(failed.error, /^Docker engine unavailable at unix:\/\/\S+ \(E[A-Z]+\)$/, failed.error);
    assert.equal(
      await callInApp(direct, app.name, 'http://app:8080/'),
      'version one\n',
      'the old version keeps serving',
    );
  } finally {
    await proxy!.restore();
  }
  await until(
    'the half-made container to be removed',
    async () => (await leftovers(d.id)).containers === 0,
    60_000,
    250,
  );
  await until(
    'the app status to be right again',
    async () => (await appStatus(app.id)) === 'running',
    60_000,
    250,
  );
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'version one\n');
});

test('the reaper fails a deployment past SVC_DEPLOY_TIMEOUT, cancels its build and removes what it made', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await servingApp('reap');
  await git!.commit(app.repo, webRepo('never served', `RUN echo ${uniq()} && sleep 120`), 'slow build');
  const d = await deploy(app.id);
  await until(
    'the slow build to run',
    async () => /sleep 120/.test(await logText(app.id, d.id)),
    120_000,
    200,
  );
  const opts = s!.env.deployments.opts;
  // Everything running is now past the timeout; the next reaper round fails it.
  opts.timeoutMs = 1;
  try {
    const failed = await waitStatus(admin, app.id, d.id, ['failed'], 120_000);
    assert.match(failed.error, /^timed out after \d+ s \(SVC_DEPLOY_TIMEOUT\)$/);
  } finally {
    opts.timeoutMs = DEFAULT_TIMEOUT;
  }
  assert.match(await logText(app.id, d.id), /failed: timed out/);
  assert.deepEqual(await leftovers(d.id), { containers: 0, images: 0 });
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'version one\n');
  await until(
    'the app status to be running',
    async () => (await appStatus(app.id)) === 'running',
    60_000,
    250,
  );
});

test('a deployment wedged on an engine that stopped answering is failed by the reaper, and cleaned up once the engine answers', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await servingApp('wedge');
  await git!.commit(app.repo, slowToStart('never served'), 'slow to start');
  const d = await deploy(app.id);
  await waitStatus(admin, app.id, d.id, ['health_checking']);
  const opts = s!.env.deployments.opts;
  proxy!.stall(true);
  opts.timeoutMs = 1;
  try {
    const failed = await waitStatus(admin, app.id, d.id, ['failed'], 120_000);
    assert.match(failed.error, /^timed out after \d+ s \(SVC_DEPLOY_TIMEOUT\); the engine did not answer/);
    assert.equal(
      await callInApp(direct, app.name, 'http://app:8080/'),
      'version one\n',
      'the old version keeps serving',
    );
    assert.equal((await leftovers(d.id)).containers, 1, 'nothing could be removed yet');
  } finally {
    opts.timeoutMs = DEFAULT_TIMEOUT;
    proxy!.stall(false);
  }
  await until(
    "the wedged deployment's container to be removed",
    async () => (await leftovers(d.id)).containers === 0,
    60_000,
    250,
  );
  await until(
    'the app status to be running',
    async () => (await appStatus(app.id)) === 'running',
    60_000,
    250,
  );
  await git!.commit(app.repo, webRepo('version three'));
  const next = await deploy(app.id);
  await waitStatus(admin, app.id, next.id, ['succeeded']);
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'version three\n');
});
