// The app's status against the real engine: steady while its containers are healthy (also while a
// new version rolls out next to them), degraded when a service is really unhealthy or has exited.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestServer, adminClient, Client, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { startGitServer, waitStatus, cleanupApp, type GitServer } from './_deploy.js';
import { execIn, until } from './_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';

const run = promisify(execFile);
const WEB_IMAGE = 'svc-test/status-web:2';
let s: TestServer;
let c: Client;
let git: GitServer;
const made: string[] = [];

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
  git = await startGitServer();
});
after(async () => {
  for (const name of made) await cleanupApp(s.env.engine, name);
  await git.stop();
  await s.stop();
});

// Healthy only once /tmp/ready exists, which takes a few seconds after start: a new container
// is visibly "starting" next to the healthy old one during a rollout.
const webDockerfile = [
  `FROM ${BASE_IMAGE}`,
  'RUN mkdir -p /www && echo ok > /www/index.html',
  'HEALTHCHECK --interval=1s --timeout=2s --retries=2 --start-period=60s CMD test -f /tmp/ready',
  `CMD ["sh", "-c", "trap 'exit 0' TERM; (sleep 3; touch /tmp/ready) & httpd -f -p 8080 -h /www & wait"]`,
].join('\n');

const compose = `services:
  web:
    image: ${WEB_IMAGE}
  worker:
    image: ${BASE_IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 86400 & wait"]
    restart: "no"
`;

async function statusReads(appId: string, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const one = await c.req('GET', `/api/apps/${appId}`);
    assert.equal(one.status, 200, one.text);
    out.push(one.body.app.status);
    const list = await c.req('GET', '/api/apps');
    assert.equal(list.status, 200, list.text);
    out.push(list.body.items.find((a: { id: string }) => a.id === appId).status);
  }
  return out;
}

const serviceOf = async (appId: string, name: string) =>
  (await c.req('GET', `/api/apps/${appId}/services`)).body.items.find(
    (x: { name: string }) => x.name === name,
  );

test('status: the same answer on every read while healthy, through a rollout; degraded when a service is unhealthy or exited', async (t) => {
  if (!(await needEngine(t))) return;
  await run('sh', ['-c', 'printf "%s\\n" "$1" | docker build -q -t "$2" -', 'sh', webDockerfile, WEB_IMAGE]);
  const repo = `st-${Math.random().toString(36).slice(2, 8)}`;
  await git.commit(repo, { 'compose.yaml': compose });
  const created = await c.req('POST', '/api/apps', {
    name: repo,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(created.status, 201, created.text);
  const app = created.body.app;
  made.push(app.name);

  const first = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(first.status, 202, first.text);
  await waitStatus(c, app.id, first.body.deployment.id, ['succeeded']);
  await until(
    'app running',
    async () => (await c.req('GET', `/api/apps/${app.id}`)).body.app.status === 'running',
  );
  assert.deepEqual(new Set(await statusReads(app.id, 10)), new Set(['running']));

  // A second rollout: the new web container is "starting" for seconds next to the healthy old
  // one. The app reads `deploying`, then `running`, never `degraded`.
  const seen = new Set<string>();
  const off = s.env.bus.onAny((e) => {
    const d = e.data as { type?: string; app_id?: string; status?: string };
    if (e.topic === 'apps' && d.type === 'status' && d.app_id === app.id && d.status)
      seen.add(`event:${d.status}`);
  });
  try {
    const second = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
    assert.equal(second.status, 202, second.text);
    await until(
      'second deployment finished',
      async () => {
        for (const st of await statusReads(app.id, 1)) seen.add(`read:${st}`);
        const d = (await c.req('GET', `/api/apps/${app.id}/deployments/${second.body.deployment.id}`)).body
          .deployment;
        return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) ? d : null;
      },
      240_000,
      200,
    ).then((d) => assert.equal(d.status, 'succeeded', d.error));
    await until(
      'app running after the rollout',
      async () => (await c.req('GET', `/api/apps/${app.id}`)).body.app.status === 'running',
    );
  } finally {
    off();
  }
  assert.ok(seen.has('read:deploying'), [...seen].join(', '));
  for (const v of seen) assert.match(v, /:(deploying|running)$/, [...seen].join(', '));
  assert.deepEqual(new Set(await statusReads(app.id, 10)), new Set(['running']));

  // Really unhealthy: its healthcheck fails from now on. (Once the previous version is retired.)
  const web = await until('one web container', async () => {
    const list = await listAppContainers(s.env.engine, app.name, { service: 'web' });
    return list.length === 1 && list[0]!.state === 'running' ? list[0] : null;
  });
  assert.equal((await execIn(s.env.engine, web.id, ['rm', '-f', '/tmp/ready'])).exitCode, 0);
  await until('web unhealthy', async () => (await serviceOf(app.id, 'web'))?.health === 'unhealthy');
  assert.deepEqual(new Set(await statusReads(app.id, 5)), new Set(['degraded']));
  assert.equal((await execIn(s.env.engine, web.id, ['touch', '/tmp/ready'])).exitCode, 0);
  await until(
    'healthy again',
    async () => (await c.req('GET', `/api/apps/${app.id}`)).body.app.status === 'running',
  );

  // Exited: the worker dies and, with restart "no", stays down.
  const worker = await until('one worker container', async () => {
    const list = await listAppContainers(s.env.engine, app.name, { service: 'worker' });
    return list.length === 1 && list[0]!.state === 'running' ? list[0] : null;
  });
  await s.env.engine.docker.getContainer(worker.id).kill();
  await until('worker exited', async () => (await serviceOf(app.id, 'worker'))?.status === 'exited');
  assert.deepEqual(new Set(await statusReads(app.id, 5)), new Set(['degraded']));
  assert.equal((await c.req('GET', `/api/apps/${app.id}`)).body.app.status, 'degraded');
});
