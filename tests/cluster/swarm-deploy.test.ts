// Deploys on a swarm (SVC_CLUSTER=swarm) through the real control plane: three real engines, a real
// registry, images pushed by digest, start-first updates, rollback on a failing health check, a
// constraint nobody satisfies, and a volume-backed service pinned to its node.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { needCluster, startTestCluster, type TestCluster } from '../_support/cluster.js';
import { BASE_IMAGE } from '../_support/docker.js';
import { ADMIN, adminClient, startTestServer, type Client, type TestServer } from '../_support/server.js';
import { startGitServer, type GitServer } from '../_support/gitserver.js';
import { bounded, poll } from '../_support/wait.js';
import {
  buildWebImage,
  probeTasks,
  startRegistry,
  webDockerfile,
  WEB_CMD,
  type TestRegistry,
} from './_swarm.js';

const WEB = 'svc-test/swarm-web:1';
let cluster: TestCluster | null = null;
let registry: TestRegistry | null = null;
let server: TestServer | null = null;
let git: GitServer | null = null;
let admin: Client;
let ready = false;

before(async () => {
  if (process.getuid?.() !== 0) return;
  await buildWebImage(WEB);
  const started = Date.now();
  // Any registry on the private test range is plain HTTP to these engines.
  cluster = await startTestCluster({ size: 3, insecureRegistries: ['10.0.0.0/8'] });
  registry = await startRegistry(cluster.hostAddr);
  // Only the manager has the web image: the other nodes can only get it through the registry.
  await cluster.loadImages([WEB], [cluster.manager]);
  console.log(`cluster and registry up in ${Date.now() - started} ms`);
  server = await startTestServer({
    SVC_CLUSTER: 'swarm',
    SVC_DOCKER_SOCKET: cluster.manager.socketPath,
    SVC_REGISTRY: registry.addr,
  });
  server.env.deployments.opts.healthTimeoutMs = 90_000;
  admin = await adminClient(server);
  git = await startGitServer();
  ready = true;
});

after(async () => {
  // Bounded: a failed test must not keep the run from ending.
  await bounded('stopping the control plane', server?.stop(), 60_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await bounded('stopping the git server', git?.stop(), 30_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await bounded('stopping the registry', registry?.stop(), 30_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await cluster?.close();
});

const uniq = () => Math.random().toString(36).slice(2, 8);

async function createApp(name: string, source: unknown): Promise<any> {
  const r = await admin.req('POST', '/api/apps', { name, source });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

async function patchService(appId: string, name: string, body: unknown): Promise<void> {
  const r = await admin.req('PATCH', `/api/apps/${appId}/services/${name}`, body);
  assert.equal(r.status, 200, r.text);
}

async function deploy(appId: string): Promise<string> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return r.body.deployment.id;
}

async function finished(appId: string, depId: string): Promise<any> {
  return poll(
    `deployment ${depId}`,
    async () => {
      const d = (await admin.req('GET', `/api/apps/${appId}/deployments/${depId}`)).body.deployment;
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) ? d : null;
    },
    400_000,
    500,
  );
}

async function logOf(appId: string, depId: string): Promise<string> {
  const r = await admin.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`);
  return (r.body?.items ?? []).map((l: any) => l.line).join('\n');
}

async function succeeds(appId: string): Promise<any> {
  const id = await deploy(appId);
  const d = await finished(appId, id);
  assert.equal(d.status, 'succeeded', `${d.error}\n${await logOf(appId, id)}`);
  return d;
}

async function runningTasks(app: string, service = 'app'): Promise<any[]> {
  const tasks = (await cluster!.manager.docker.listTasks({
    filters: { service: [`svc-${app}-${service}`], 'desired-state': ['running'] },
  })) as any[];
  return tasks.filter((t) => t.Status.State === 'running');
}

/** Every distinct answer of the service's tasks, polled until `count` distinct ones came. */
async function answers(app: string, count: number, match = /./): Promise<string[]> {
  const seen = new Set<string>();
  await poll(
    `${count} tasks of ${app} answering`,
    async () => {
      for (const a of await probeTasks(cluster!.manager, `svc-${app}`, `svc-${app}-app`))
        if (match.test(a)) seen.add(a);
      return seen.size >= count;
    },
    90_000,
    500,
  );
  return [...seen];
}

test('an image app only the manager has deploys as 2 replicas on two nodes, pushed by digest; listings show the tasks', async (t) => {
  if (!(await needCluster(t)) || !ready) return;
  const name = `si-${uniq()}`;
  const app = await createApp(name, { type: 'image', image: WEB });
  await patchService(app.id, 'app', {
    port: 8080,
    health_path: '/ok',
    replicas: 2,
    placement: { constraints: ['node.role==worker'] },
  });
  const d = await succeeds(app.id);
  assert.match(d.images.app, new RegExp(`^${registry!.addr}/svc-test/swarm-web@sha256:[0-9a-f]{64}$`));
  const tasks = await runningTasks(name);
  assert.equal(tasks.length, 2);
  const nodes = new Set(tasks.map((x) => x.NodeID));
  assert.equal(nodes.size, 2, 'on two nodes');
  assert.ok(!nodes.has(cluster!.manager.id), 'workers only');
  assert.equal((await answers(name, 2)).length, 2);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}`)).body.app.status, 'running');
  const svc = (await admin.req('GET', `/api/apps/${app.id}/services`)).body.items[0];
  assert.equal(svc.name, 'app');
  const taskNodes = svc.tasks.filter((x: any) => x.state === 'running').map((x: any) => x.node);
  assert.deepEqual(taskNodes.sort(), ['node2', 'node3']);
  const spec = (await cluster!.manager.docker.getService(`svc-${name}-app`).inspect()) as any;
  assert.equal(spec.Spec.EndpointSpec.Mode, 'dnsrr');
  assert.equal(spec.Spec.UpdateConfig.Order, 'start-first');
  const hcheck = spec.Spec.TaskTemplate.ContainerSpec.Healthcheck;
  assert.match(hcheck?.Test?.[1] ?? '', /wget .*127\.0\.0\.1:8080\/ok/, await logOf(app.id, d.id));
  const net = (await cluster!.manager.docker.getNetwork(`svc-${name}`).inspect()) as any;
  assert.equal(net.Driver, 'overlay');
  assert.equal(net.Attachable, true);

  // A redeploy (a new env value) replaces the tasks start-first: some task answers all along.
  const put = await admin.req('PUT', `/api/apps/${app.id}/env`, { items: [{ key: 'MSG', value: 'v2' }] });
  assert.ok(put.status < 300, put.text);
  const id = await deploy(app.id);
  const rounds: string[][] = [];
  const until = Date.now() + 400_000;
  for (;;) {
    if (Date.now() > until) throw new Error(`deployment ${id} did not end within 400 s`);
    const d2 = (await admin.req('GET', `/api/apps/${app.id}/deployments/${id}`)).body.deployment;
    if (['succeeded', 'failed', 'canceled'].includes(d2.status)) {
      assert.equal(d2.status, 'succeeded', `${d2.error}\n${await logOf(app.id, id)}`);
      break;
    }
    rounds.push(await probeTasks(cluster!.manager, `svc-${name}`, `svc-${name}-app`));
  }
  assert.ok(rounds.length > 0);
  assert.ok(
    rounds.every((r) => r.length > 0),
    `a round with no answer: ${JSON.stringify(rounds)}`,
  );
  const after2 = await answers(name, 2, /^v2 /);
  assert.equal(after2.length, 2);

  // A failing health check: the swarm rolls back, the deployment fails with a reason, v2 answers.
  await patchService(app.id, 'app', { health_path: '/nope' });
  await admin.req('PUT', `/api/apps/${app.id}/env`, { items: [{ key: 'MSG', value: 'v3' }] });
  const bad = await deploy(app.id);
  const failed = await finished(app.id, bad);
  assert.equal(failed.status, 'failed', await logOf(app.id, bad));
  assert.match(failed.error, /rolled back/, failed.error);
  console.log(`failed health check: ${failed.error}`);
  assert.ok((await answers(name, 1, /^v2 /)).length >= 1);
  const back = (await cluster!.manager.docker.getService(`svc-${name}-app`).inspect()) as any;
  assert.match(back.Spec.TaskTemplate.ContainerSpec.Healthcheck.Test[1], /\/ok/);

  // A constraint nobody satisfies: a readable failure, never a hang or a success; v2 still answers.
  await patchService(app.id, 'app', {
    health_path: '/ok',
    placement: { constraints: ['node.labels.zone==nowhere'] },
  });
  const unplaceable = await deploy(app.id);
  const f2 = await finished(app.id, unplaceable);
  assert.equal(f2.status, 'failed', await logOf(app.id, unplaceable));
  assert.match(f2.error, /no suitable node/, f2.error);
  console.log(`unplaceable: ${f2.error}`);
  assert.ok((await answers(name, 1, /^v2 /)).length >= 1);

  // Stop scales to 0, start back to the replicas setting.
  await patchService(app.id, 'app', { placement: { constraints: ['node.role==worker'] } });
  const stop = await admin.req('POST', `/api/apps/${app.id}/stop`);
  assert.equal(stop.status, 200, stop.text);
  await poll('no task running', async () => (await runningTasks(name)).length === 0, 60_000, 500);
  const start = await admin.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(start.status, 200, start.text);
  await poll('two tasks running', async () => (await runningTasks(name)).length === 2, 90_000, 500);

  const up = await admin.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(up.status, 200, up.text);
  const del = await admin.req('DELETE', `/api/apps/${app.id}`);
  assert.ok(del.status < 300, del.text);
  const left = (await cluster!.manager.docker.listServices({
    filters: { label: [`svc.app=${name}`] },
  })) as any[];
  assert.equal(left.length, 0);
});

test('a Dockerfile app built on the manager runs 2 replicas spread over two nodes', async (t) => {
  if (!(await needCluster(t)) || !ready) return;
  const name = `sd-${uniq()}`;
  await git!.commit(name, { Dockerfile: webDockerfile() }, 'web');
  const app = await createApp(name, { type: 'git', repo_url: git!.url(name), branch: 'main' });
  await patchService(app.id, 'app', {
    port: 8080,
    replicas: 2,
    placement: { constraints: ['node.hostname!=node1'] },
  });
  const d = await succeeds(app.id);
  assert.match(d.images.app, /@sha256:[0-9a-f]{64}$/);
  const tasks = await runningTasks(name);
  assert.equal(new Set(tasks.map((x) => x.NodeID)).size, 2);
  assert.equal((await answers(name, 2)).length, 2);

  // v2, then a rollback to v1: the recorded registry reference runs again, nothing is built.
  await git!.commit(name, { Dockerfile: webDockerfile('v2') }, 'v2');
  const d2 = await succeeds(app.id);
  assert.notEqual(d2.images.app, d.images.app);
  assert.equal((await answers(name, 2, /^v2 /)).length, 2);
  const rb = await admin.req('POST', `/api/apps/${app.id}/deployments/${d.id}/rollback`);
  assert.equal(rb.status, 202, rb.text);
  const done = await finished(app.id, rb.body.deployment.id);
  assert.equal(done.status, 'succeeded', `${done.error}\n${await logOf(app.id, done.id)}`);
  assert.equal(done.images.app, d.images.app);
  assert.doesNotMatch(await logOf(app.id, done.id), /building|pushing/);
  assert.equal((await answers(name, 2, /^v1 /)).length, 2);
  const spec = (await cluster!.manager.docker.getService(`svc-${name}-app`).inspect()) as any;
  assert.equal(spec.Spec.TaskTemplate.ContainerSpec.Image, d.images.app);

  // A cancel during the update rolls the service back to the version that served.
  await patchService(app.id, 'app', { health_path: '/never' });
  await git!.commit(name, { Dockerfile: webDockerfile('v3') }, 'v3');
  const c = await deploy(app.id);
  await poll(
    'the update under way',
    async () =>
      (await admin.req('GET', `/api/apps/${app.id}/deployments/${c}`)).body.deployment.status ===
      'health_checking',
    240_000,
    200,
  );
  const cancel = await admin.req('POST', `/api/apps/${app.id}/deployments/${c}/cancel`);
  assert.equal(cancel.status, 200, cancel.text);
  const canceled = await finished(app.id, c);
  assert.equal(canceled.status, 'canceled', await logOf(app.id, c));
  assert.match(await logOf(app.id, c), /rolling the swarm service back|previous version runs again/);
  await poll(
    'the previous spec back',
    async () => {
      const now = (await cluster!.manager.docker.getService(`svc-${name}-app`).inspect()) as any;
      return now.Spec.TaskTemplate.ContainerSpec.Image === d.images.app;
    },
    60_000,
    500,
  );
  assert.ok((await answers(name, 1, /^v1 /)).length >= 1);
});

test('a service with a named volume is pinned to its node and keeps its data across redeploys', async (t) => {
  if (!(await needCluster(t)) || !ready) return;
  const name = `sv-${uniq()}`;
  const compose = [
    'services:',
    '  app:',
    `    image: ${WEB}`,
    `    command: ["sh", "-c", ${JSON.stringify(WEB_CMD)}]`,
    '    volumes:',
    '      - data:/data',
    'volumes:',
    '  data: {}',
    '',
  ].join('\n');
  const app = await createApp(name, { type: 'compose', compose });
  await patchService(app.id, 'app', { port: 8080 });
  await succeeds(app.id);
  const first = await runningTasks(name);
  assert.equal(first.length, 1);
  const node = first[0].NodeID;
  for (const n of [2, 3]) {
    await admin.req('PUT', `/api/apps/${app.id}/env`, { items: [{ key: 'MSG', value: `v${n}` }] });
    await succeeds(app.id);
    const now = await runningTasks(name);
    assert.deepEqual(
      now.map((x) => x.NodeID),
      [node],
      'the same node',
    );
    const starts = await poll(
      'the start count',
      async () => (await probeTasks(cluster!.manager, `svc-${name}`, `svc-${name}-app`, '/starts'))[0],
      60_000,
      500,
    );
    assert.equal(Number(starts), n, 'the volume kept every start');
  }
  const spec = (await cluster!.manager.docker.getService(`svc-${name}-app`).inspect()) as any;
  assert.ok(spec.Spec.TaskTemplate.Placement.Constraints.includes(`node.id==${node}`));
  assert.ok(BASE_IMAGE);
});
