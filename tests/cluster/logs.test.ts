// An app's logs in cluster mode: the `logs:<app>` topic carries the lines of every task of its
// Swarm services, on every node, gathered by the manager, each named by its task.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_IMAGE } from '../_support/docker.js';
import { needCluster, startTestCluster, unpullable } from '../_support/cluster.js';
import { adminClient, apiToken, startTestServer } from '../_support/server.js';
import { openSocket, wsUrl } from '../_support/ws.js';
import { bounded, poll } from '../_support/wait.js';
import { swarmServiceName } from '#lib/docker/index.js';
import { serviceLabels } from '#lib/cluster/spec.js';

test('logs: every task on every node reaches the app topic, named by its task', async (t) => {
  if (!(await needCluster(t))) return;
  const cluster = await startTestCluster({ size: 2 });
  t.after(() => cluster.close());
  const manager = cluster.manager;
  const server = await startTestServer({ SVC_CLUSTER: 'swarm', SVC_DOCKER_SOCKET: manager.socketPath });
  t.after(() => bounded('stopping the control plane', server.stop(), 60_000));
  const c = await adminClient(server);
  const made = await c.req('POST', '/api/apps', {
    name: 'chatty',
    source: { type: 'image', image: BASE_IMAGE },
  });
  assert.equal(made.status, 201, made.text);
  const name = swarmServiceName('chatty', 'app');
  await manager.docker.createService({}, {
    Name: name,
    Labels: serviceLabels(server.env.engine, 'chatty', 'app', 'dep1'),
    TaskTemplate: {
      ContainerSpec: {
        Image: unpullable(BASE_IMAGE),
        Command: ['sh', '-c', 'while true; do echo "alive on $(hostname)"; sleep 1; done'],
      },
      Placement: { MaxReplicas: 1 },
    },
    Mode: { Replicated: { Replicas: 2 } },
    EndpointSpec: { Mode: 'dnsrr' },
  } as any);
  const ws = await openSocket(wsUrl(server.url), { authorization: `Bearer ${await apiToken(c, 'logs')}` });
  t.after(() => ws.close());
  const hosts = new Set<string>();
  const tasks = new Set<string>();
  const services = new Set<string>();
  ws.on('message', (m) => {
    const f = JSON.parse(String(m));
    const hit = f.type === 'event' ? /^alive on (\S+)$/.exec(f.data.line) : null;
    if (!hit) return;
    hosts.add(hit[1]!);
    tasks.add(f.data.container);
    services.add(f.data.service);
  });
  ws.send(JSON.stringify({ type: 'subscribe', topic: `logs:${made.body.app.id}` }));
  await poll('lines from both tasks', async () => hosts.size === 2, 90_000, 250);
  assert.deepEqual([...services], ['app']);
  assert.equal(tasks.size, 2, [...tasks].join(', '));
  assert.ok(
    [...tasks].every((x) => /^task [a-z0-9]{12}$/.test(x)),
    [...tasks].join(', '),
  );
  const nodes = (await manager.docker.listTasks({ filters: { service: [name] } })) as Array<{
    NodeID: string;
  }>;
  assert.equal(new Set(nodes.map((x) => x.NodeID)).size, 2, 'one task on each node');
});
