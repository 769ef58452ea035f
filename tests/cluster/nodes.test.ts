// The nodes API against a real swarm: four engines in network namespaces (node4 leaves first, to
// join again through the join command), a control plane in cluster mode talking to node1, its own
// registry on node1 with its certificate authority, and a test service that drain moves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BASE_IMAGE } from '../_support/docker.js';
import { needCluster, startTestCluster, unpullable, type ClusterNode } from '../_support/cluster.js';
import { ADMIN, adminClient, startTestServer, type Client } from '../_support/server.js';
import { ensureRegistryImage } from '../_support/registryimage.js';
import { bounded, poll } from '../_support/wait.js';
import { swarmServiceName } from '#lib/docker/index.js';
import { serviceLabels } from '#lib/cluster/spec.js';

const run = promisify(execFile);

/**
 * The docker CLI against a node. `config`: the CLI's own folder (its logins); by default an empty
 * one, so no login of this host's user (or of an earlier step) is used by accident.
 */
function docker(node: ClusterNode, args: string[], config = emptyConfig()) {
  return run('docker', ['-H', `unix://${node.socketPath}`, ...args], {
    timeout: 120_000,
    env: { ...process.env, DOCKER_CONFIG: config },
  });
}

const configs: string[] = [];
function emptyConfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-docker-config-'));
  configs.push(dir);
  return dir;
}

async function stepUp(c: Client): Promise<void> {
  const r = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(r.status, 200, r.text);
}

async function runningOn(node: ClusterNode, manager: ClusterNode, service: string): Promise<number> {
  const tasks = (await manager.docker.listTasks({
    filters: { service: [service], 'desired-state': ['running'] },
  })) as Array<{ NodeID: string; Status: { State: string } }>;
  return tasks.filter((t) => t.NodeID === node.id && t.Status.State === 'running').length;
}

test('nodes: list, labels, drain, join and its expiry, the registry over TLS, removal', async (t) => {
  if (!(await needCluster(t))) return;
  const registryImage = await ensureRegistryImage();
  const cluster = await startTestCluster({ size: 4 });
  t.after(() => cluster.close());
  const [node1, node2, node3, node4] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode, ClusterNode];
  t.after(() => configs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  await cluster.loadImages([registryImage], [node1]);
  // node4 starts outside the swarm: the join command brings it in.
  await node4.docker.swarmLeave({ force: true });
  await poll(
    'node4 down',
    async () => ((await node1.docker.getNode(node4.id).inspect()) as any).Status.State === 'down',
    60_000,
    300,
  );
  await node1.docker.getNode(node4.id).remove({ force: true });

  const server = await startTestServer({
    SVC_CLUSTER: 'swarm',
    SVC_DOCKER_SOCKET: node1.socketPath,
    SVC_IMAGE_MAP: JSON.stringify({ 'registry:2': registryImage }),
    SVC_CLUSTER_JOIN_TTL: '20',
  });
  t.after(() => bounded('stopping the control plane', server.stop(), 60_000));
  // The trust file the control plane wrote on this host for its registry (the nodes share /etc).
  t.after(() => rmSync(`/etc/docker/certs.d/${node1.addr}:5000`, { recursive: true, force: true }));
  const c = await adminClient(server);
  const byName = async () => {
    const r = await c.req('GET', '/api/nodes');
    assert.equal(r.status, 200, r.text);
    return new Map<string, any>(r.body.items.map((n: any) => [n.hostname, n]));
  };

  await t.test('the list shows three nodes with roles, status and resources', async () => {
    const nodes = await byName();
    assert.deepEqual([...nodes.keys()], ['node1', 'node2', 'node3']);
    assert.equal(nodes.get('node1').role, 'manager');
    assert.equal(nodes.get('node2').role, 'worker');
    for (const n of nodes.values()) {
      assert.equal(n.status, 'ready');
      assert.equal(n.availability, 'active');
      assert.ok(n.cpus > 0 && n.memory_bytes > 0, JSON.stringify(n));
      assert.match(n.engine_version, /^\d+\./);
      assert.match(n.addr, /^10\.\d+\.0\.1[1-3]$/);
    }
    const info = await c.req('GET', '/api/instance/info');
    assert.equal(info.status, 200, info.text);
    assert.equal(info.body.cluster.mode, 'swarm');
    assert.equal(info.body.cluster.nodes, 3);
    assert.equal(info.body.cluster.managers, 1);
    const posture = await c.req('GET', '/api/security/posture');
    const managers = posture.body.items.find((i: any) => i.code === 'cluster_managers');
    assert.equal(managers?.status, 'warning', 'one manager cannot keep a quorum when it is lost');
  });

  await t.test('labels are replaced, reserved ones refused', async () => {
    const r = await c.req('PATCH', `/api/nodes/${node2.id}`, { labels: { zone: 'a', 'disk.kind': 'ssd' } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.node.labels, { zone: 'a', 'disk.kind': 'ssd' });
    const spec = ((await node1.docker.getNode(node2.id).inspect()) as any).Spec;
    assert.deepEqual(spec.Labels, { zone: 'a', 'disk.kind': 'ssd' });
    assert.equal(spec.Role, 'worker', 'the rest of the spec is kept');
    const reserved = await c.req('PATCH', `/api/nodes/${node2.id}`, { labels: { 'svc.pin': 'x' } });
    assert.equal(reserved.status, 400, reserved.text);
    assert.equal(reserved.body.code, 'bad_request');
    const after = await byName();
    assert.deepEqual(after.get('node2').labels, { zone: 'a', 'disk.kind': 'ssd' });
  });

  await t.test('drain moves a service off the node; the list shows it drained', async () => {
    await node1.docker.createService({}, {
      Name: 'drainprobe',
      TaskTemplate: {
        ContainerSpec: { Image: unpullable(BASE_IMAGE), Command: ['sleep', '3600'] },
        Placement: { MaxReplicas: 1 },
      },
      Mode: { Replicated: { Replicas: 3 } },
      EndpointSpec: { Mode: 'dnsrr' },
    } as any);
    await poll('a task running on node3', () => runningOn(node3, node1, 'drainprobe'), 120_000, 500);
    const r = await c.req('PATCH', `/api/nodes/${node3.id}`, { availability: 'drain' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.node.availability, 'drain');
    await poll(
      'no task left on node3',
      async () => (await runningOn(node3, node1, 'drainprobe')) === 0,
      120_000,
      500,
    );
    const nodes = await byName();
    assert.equal(nodes.get('node3').availability, 'drain');
    assert.equal(nodes.get('node3').tasks, 0);
    await node1.docker.getService('drainprobe').remove();
  });

  await t.test(
    'a running app service takes new replicas and placement at once, through the API',
    async () => {
      const made = await c.req('POST', '/api/apps', {
        name: 'scale',
        source: { type: 'image', image: BASE_IMAGE },
      });
      assert.equal(made.status, 201, made.text);
      const engine = server.env.engine;
      const name = swarmServiceName('scale', 'app');
      await node1.docker.createService({}, {
        Name: name,
        Labels: serviceLabels(engine, 'scale', 'app', 'dep1'),
        TaskTemplate: { ContainerSpec: { Image: unpullable(BASE_IMAGE), Command: ['sleep', '3600'] } },
        Mode: { Replicated: { Replicas: 1 } },
        EndpointSpec: { Mode: 'dnsrr' },
      } as any);
      const on = async (node: ClusterNode) => runningOn(node, node1, name);
      const total = async () => (await on(node1)) + (await on(node2)) + (await on(node3));
      await poll('one task', async () => (await total()) === 1, 120_000, 500);
      const id = made.body.app.id;
      const r = await c.req('PATCH', `/api/apps/${id}/services/app`, { replicas: 3 });
      assert.equal(r.status, 200, r.text);
      await poll('three tasks', async () => (await total()) === 3, 120_000, 500);
      const p = await c.req('PATCH', `/api/apps/${id}/services/app`, {
        placement: { constraints: ['node.hostname==node2'] },
      });
      assert.equal(p.status, 200, p.text);
      await poll(
        'every task on node2',
        async () => (await on(node2)) === 3 && (await total()) === 3,
        120_000,
        500,
      );
      const listed = await c.req('GET', `/api/apps/${id}/services`);
      assert.deepEqual(
        listed.body.items[0].tasks.filter((x: any) => x.state === 'running').map((x: any) => x.node),
        ['node2', 'node2', 'node2'],
      );
      await node1.docker.getService(name).remove();
    },
  );

  let command = '';
  const joined = emptyConfig();
  await t.test(
    'the join command logs a fourth engine in to the registry, joins it as a worker, and trusts the registry',
    async () => {
      const denied = await c.req('POST', '/api/nodes/join');
      assert.equal(denied.status, 403);
      assert.equal(denied.body.code, 'step_up_required');
      await stepUp(c);
      const r = await c.req('POST', '/api/nodes/join');
      assert.equal(r.status, 200, r.text);
      command = r.body.command;
      assert.ok(Date.parse(r.body.expires_at) > Date.now());
      assert.match(
        command,
        /^mkdir -p '\/etc\/docker\/certs\.d\/10\.\d+\.0\.11:5000' && printf %s '[A-Za-z0-9+/=]+' \| base64 -d > /,
      );
      assert.match(command, / && docker swarm join --token 'SWMTKN-1-[a-z0-9-]+' '10\.\d+\.0\.11:2377'$/);
      assert.match(
        command,
        / && printf %s '[A-Za-z0-9+/=]+' \| base64 -d \| docker login --username 'svc' --password-stdin '10\.\d+\.0\.11:5000' && /,
      );
      const token = ((await node1.docker.swarmInspect()) as any).JoinTokens.Worker;
      assert.ok(command.includes(token), 'the current worker token');
      // The CLI keeps the login in DOCKER_CONFIG: a folder of the test's, not this host's root's.
      await run('sh', ['-c', command], {
        env: { ...process.env, DOCKER_HOST: `unix://${node4.socketPath}`, DOCKER_CONFIG: joined },
        timeout: 60_000,
      });
      const nodes = await poll(
        'node4 listed ready',
        async () => {
          const n = await byName();
          return n.get('node4')?.status === 'ready' ? n : null;
        },
        60_000,
        500,
      );
      assert.equal(nodes.get('node4').role, 'worker');
      const audit = await c.req('GET', '/api/audit?action=node.join_command');
      assert.equal(audit.body.items[0]?.event, 'node.join_command', audit.text);
      assert.ok(!audit.text.includes(token), 'the token is not in the audit log');
    },
  );

  await t.test(
    "the own registry: anonymous pushes and pulls refused; with the join command's login a push from the manager's engine, a pull on a worker over TLS",
    async () => {
      const info = await c.req('GET', '/api/instance/info');
      const registry: string = info.body.cluster.registry;
      assert.equal(registry, `${node1.addr}:5000`);
      const caFile = `/etc/docker/certs.d/${registry}/ca.crt`;
      assert.ok(existsSync(caFile));
      const ref = `${registry}/probe/busybox:1`;
      await docker(node1, ['tag', BASE_IMAGE, ref]);
      // Nobody gets in without the account: neither a push nor a pull, nor a plain HTTPS request.
      await assert.rejects(
        docker(node1, ['push', ref]),
        /no basic auth credentials|unauthorized|authentication required/i,
      );
      await assert.rejects(
        docker(node4, ['pull', ref]),
        /no basic auth credentials|unauthorized|authentication required/i,
      );
      const catalog = await new Promise<number>((resolve, reject) =>
        httpsGet(
          `https://${registry}/v2/_catalog`,
          { ca: readFileSync(caFile, 'utf8'), timeout: 30_000 },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        )
          .on('timeout', function (this: { destroy(e: Error): void }) {
            this.destroy(new Error('the catalog did not answer within 30 s'));
          })
          .on('error', reject),
      );
      assert.equal(catalog, 401, 'the catalog asks for credentials');
      // The account the join command gave node4's CLI: the manager pushes with it, node4 pulls.
      await docker(node1, ['push', ref], joined);
      await docker(node4, ['pull', ref], joined);
      // Without the CA file the engine does not trust the registry's certificate.
      const ca = readFileSync(caFile, 'utf8');
      renameSync(caFile, `${caFile}.away`);
      try {
        await docker(node3, ['image', 'rm', ref]).catch(() => undefined);
        await assert.rejects(docker(node3, ['pull', ref], joined), /certificate|x509/i);
      } finally {
        renameSync(`${caFile}.away`, caFile);
      }
      assert.match(
        command,
        new RegExp(Buffer.from(ca).toString('base64').slice(0, 40).replace(/[+/]/g, '\\$&')),
      );
      const container = await node1.docker.getContainer('svc-registry').inspect();
      assert.equal(container.Config.Labels['svc.instance'], server.env.engine.owner.instanceId);
      assert.equal(container.HostConfig.PortBindings['5000/tcp'][0].HostIp, node1.addr);
    },
  );

  await t.test('after its expiry the same command no longer joins', async () => {
    const before = command.match(/--token '([^']+)'/)![1];
    await poll(
      'the worker token rotated',
      async () => ((await node1.docker.swarmInspect()) as any).JoinTokens.Worker !== before,
      90_000,
      1000,
    );
    await node4.docker.swarmLeave({ force: true });
    await assert.rejects(
      run('sh', ['-c', command], {
        env: { ...process.env, DOCKER_HOST: `unix://${node4.socketPath}` },
        timeout: 60_000,
      }),
      /token|invalid|rejected/i,
    );
  });

  await t.test(
    'remove: refused for an active node and a manager, allowed once the node is down',
    async () => {
      await stepUp(c);
      const active = await c.req('DELETE', `/api/nodes/${node2.id}`);
      assert.equal(active.status, 409, active.text);
      assert.match(active.body.error, /drain it first/);
      const manager = await c.req('DELETE', `/api/nodes/${node1.id}`);
      assert.equal(manager.status, 409, manager.text);
      assert.match(manager.body.error, /manager/);
      await cluster.killNode(node2);
      await poll('node2 down', async () => (await byName()).get('node2')?.status === 'down', 120_000, 1000);
      const posture = await c.req('GET', '/api/security/posture');
      const down = posture.body.items.find((i: any) => i.code === 'cluster_nodes');
      assert.equal(down?.status, 'warning');
      assert.match(down.reason, /node2/);
      const gone = await c.req('DELETE', `/api/nodes/${node2.id}`);
      assert.equal(gone.status, 204, gone.text);
      const drained = await c.req('DELETE', `/api/nodes/${node3.id}`);
      assert.equal(drained.status, 204, drained.text);
      const left = await byName();
      assert.ok(!left.has('node2') && !left.has('node3'), [...left.keys()].join(', '));
    },
  );
});
