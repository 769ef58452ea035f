// Jobs and the release command on a swarm (SVC_CLUSTER=swarm), through the real control plane: two
// real engines and a real registry. A run is a job service made from the service's own spec: the
// swarm runs it once, on a node that can run the service (here: workers only), with the service's
// image and environment; its output and exit code are kept and the job service goes. The release
// command runs the same way before the new version's tasks.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { needCluster, startTestCluster, type TestCluster } from '../_support/cluster.js';
import { adminClient, startTestServer, type Client, type TestServer } from '../_support/server.js';
import { poll } from '../_support/wait.js';
import { buildWebImage, startRegistry, type TestRegistry } from './_swarm.js';

const WEB = 'svc-test/swarm-web:1';
let cluster: TestCluster | null = null;
let registry: TestRegistry | null = null;
let server: TestServer | null = null;
let admin: Client;
let ready = false;

before(async () => {
  if (process.getuid?.() !== 0) return;
  await buildWebImage(WEB);
  cluster = await startTestCluster({ size: 2, insecureRegistries: ['10.0.0.0/8'] });
  registry = await startRegistry(cluster.hostAddr);
  await cluster.loadImages([WEB], [cluster.manager]);
  server = await startTestServer({
    SVC_CLUSTER: 'swarm',
    SVC_DOCKER_SOCKET: cluster.manager.socketPath,
    SVC_REGISTRY: registry.addr,
  });
  server.env.deployments.opts.healthTimeoutMs = 90_000;
  admin = await adminClient(server);
  ready = true;
});

after(async () => {
  await server?.stop().catch(() => {});
  await registry?.stop().catch(() => {});
  await cluster?.close();
});

async function deployed(appId: string): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return poll(
    'the deployment',
    async () => {
      const d = (await admin.req('GET', `/api/apps/${appId}/deployments/${r.body.deployment.id}`)).body
        .deployment;
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) ? d : null;
    },
    400_000,
    500,
  );
}

async function ended(appId: string, rid: string): Promise<any> {
  return poll(
    `run ${rid}`,
    async () => {
      const r = (await admin.req('GET', `/api/apps/${appId}/runs/${rid}`)).body.run;
      return ['queued', 'running'].includes(r.status) ? null : r;
    },
    180_000,
    500,
  );
}

test('on a swarm a run is a job service placed where the service may run, run once, with its image and env; the release command gates the deploy', async (t) => {
  if (!(await needCluster(t)) || !ready) return;
  const name = `sj-${Math.random().toString(36).slice(2, 8)}`;
  const made = await admin.req('POST', '/api/apps', { name, source: { type: 'image', image: WEB } });
  assert.equal(made.status, 201, made.text);
  const id = made.body.app.id;
  const svc = await admin.req('PATCH', `/api/apps/${id}/services/app`, {
    port: 8080,
    health_path: '/ok',
    placement: { constraints: ['node.role==worker'] },
  });
  assert.equal(svc.status, 200, svc.text);
  await admin.req('PUT', `/api/apps/${id}/env`, {
    items: [{ key: 'MSG', value: 'from-env', secret: false }],
  });
  const first = await deployed(id);
  assert.equal(first.status, 'succeeded', first.error);

  const job = await admin.req('POST', `/api/apps/${id}/jobs`, {
    name: 'where',
    schedule: '0 0 1 1 *',
    command: ['sh', '-c', 'sleep 2; echo "msg=$MSG"; exit 6'],
  });
  assert.equal(job.status, 201, job.text);
  const started = await admin.req('POST', `/api/apps/${id}/jobs/${job.body.job.id}/run`);
  assert.equal(started.status, 202, started.text);
  const rid = started.body.run.id;
  const task = await poll(
    'the run task',
    async () => {
      const tasks = (await cluster!.manager.docker.listTasks({
        filters: { service: [`svc-run-${rid}`] },
      })) as any[];
      return tasks.find((x) => x.NodeID) ?? null;
    },
    120_000,
    250,
  );
  assert.notEqual(task.NodeID, cluster!.manager.id, 'on a node that can run the service (a worker)');
  const spec = (await cluster!.manager.docker
    .getService(`svc-run-${rid}`)
    .inspect()
    .catch(() => null)) as any;
  if (spec) {
    assert.deepEqual(spec.Spec.Mode, { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } });
    assert.equal(spec.Spec.Labels['svc.run'], rid);
  }
  const run = await ended(id, rid);
  assert.equal(run.status, 'failed');
  assert.equal(run.exit_code, 6);
  const out = (await admin.req('GET', `/api/apps/${id}/runs/${rid}/logs`)).body.items as any[];
  assert.ok(
    out.some((l) => l.stream === 'stdout' && l.line === 'msg=from-env'),
    JSON.stringify(out),
  );
  const tasks = (await cluster!.manager.docker
    .listTasks({ filters: { service: [`svc-run-${rid}`] } })
    .catch(() => [])) as any[];
  assert.ok(tasks.length <= 1, 'run once');
  await poll(
    'the job service to go',
    async () =>
      !(await cluster!.manager.docker.listServices()).some((x: any) => x.Spec.Name === `svc-run-${rid}`),
    60_000,
    250,
  );
  const services = (await admin.req('GET', `/api/apps/${id}/services`)).body.items as any[];
  assert.deepEqual(
    services.map((x) => x.name),
    ['app'],
  );

  await admin.req('PATCH', `/api/apps/${id}`, {
    release_command: ['sh', '-c', 'echo "releasing $MSG"; exit 2'],
  });
  const refused = await deployed(id);
  assert.equal(refused.status, 'failed');
  assert.match(refused.error, /release command exited with code 2/);
  const log = (await admin.req('GET', `/api/apps/${id}/deployments/${refused.id}/logs`)).body.items as any[];
  assert.deepEqual(
    log.filter((l) => l.stream === 'release').map((l) => l.line),
    ['releasing from-env'],
  );
});
