// Cluster mode: the resource history reads every task of a service on every node (through the
// stats agent, a global service of busybox reading the nodes' cgroups), and a log drain receives
// the lines of every task, named by its task.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { BASE_IMAGE } from '../_support/docker.js';
import { needCluster, startTestCluster, unpullable } from '../_support/cluster.js';
import { adminClient, startTestServer } from '../_support/server.js';
import { bounded, poll } from '../_support/wait.js';
import { swarmServiceName } from '#lib/docker/index.js';
import { serviceLabels } from '#lib/cluster/spec.js';
import { AGENT_IMAGE } from '#lib/resources/agent.js';

test('resources and drains in cluster mode: every task on every node', async (t) => {
  if (!(await needCluster(t))) return;
  const cluster = await startTestCluster({ size: 2 });
  t.after(() => cluster.close());
  const manager = cluster.manager;
  const lines: Array<{ message: string; container: string; service: string }> = [];
  const recv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      lines.push(...JSON.parse(Buffer.concat(chunks).toString()));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => recv.listen(0, '127.0.0.1', () => r()));
  t.after(() => recv.close());
  const server = await startTestServer({
    SVC_CLUSTER: 'swarm',
    SVC_DOCKER_SOCKET: manager.socketPath,
    SVC_IMAGE_MAP: JSON.stringify({ [AGENT_IMAGE]: unpullable(BASE_IMAGE) }),
    SVC_RESOURCE_INTERVAL: '1',
    SVC_NOTIFY_ALLOW: '127.0.0.1',
  });
  t.after(() => bounded('stopping the control plane', server.stop(), 60_000));
  const c = await adminClient(server);
  const app = (
    await c.req('POST', '/api/apps', { name: 'busy', source: { type: 'image', image: BASE_IMAGE } })
  ).body.app;
  const drain = await c.req('POST', '/api/log-drains', {
    name: 'cluster',
    kind: 'http_json',
    url: `http://127.0.0.1:${(recv.address() as { port: number }).port}/`,
    app_ids: [app.id],
  });
  assert.equal(drain.status, 201, drain.text);
  await manager.docker.createService({}, {
    Name: swarmServiceName('busy', 'app'),
    Labels: serviceLabels(server.env.engine, 'busy', 'app', 'dep1'),
    TaskTemplate: {
      ContainerSpec: {
        Image: unpullable(BASE_IMAGE),
        Command: [
          'sh',
          '-c',
          'while :; do echo "busy on $(hostname)"; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done',
        ],
      },
      Placement: { MaxReplicas: 1 },
    },
    Mode: { Replicated: { Replicas: 2 } },
    EndpointSpec: { Mode: 'dnsrr' },
  } as any);

  const sample = await poll(
    'both tasks measured',
    () =>
      server.env.resources
        .latest(app.id)
        .find((s) => s.service === 'app' && s.measured === 2 && s.cpuPercent > 10),
    120_000,
    500,
  );
  // The test nodes' engines get cpuacct cgroups of their own but no memory ones on this kernel's
  // cgroup v1 layout, so memory reads as 0 here (tests/engine/stats-agent.test.ts reads both).
  assert.ok(sample.memoryLimitBytes > 0, JSON.stringify(sample));
  const history = await c.req('GET', `/api/apps/${app.id}/metrics/resources`);
  assert.ok(
    history.body.items.some((i: any) => i.service === 'app' && i.cpu_percent > 0),
    history.text,
  );

  await poll(
    'lines from both nodes',
    () => new Set(lines.map((l) => /^busy on (\S+)$/.exec(l.message)?.[1]).filter(Boolean)).size === 2,
    90_000,
    250,
  );
  const tasks = new Set(lines.filter((l) => l.message.startsWith('busy on')).map((l) => l.container));
  assert.equal(tasks.size, 2);
  assert.ok(
    [...tasks].every((x) => /^task [a-z0-9]{12}$/.test(x)),
    [...tasks].join(', '),
  );
  assert.ok(lines.every((l) => l.service === 'app'));
});
