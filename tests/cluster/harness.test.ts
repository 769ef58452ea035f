// The test cluster itself: three real engines in network namespaces form a swarm, and a dnsrr
// service on an overlay network answers from tasks on two nodes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BASE_IMAGE } from '../_support/docker.js';
import { needCluster, startTestCluster, unpullable } from '../_support/cluster.js';

const run = promisify(execFile);

test('three engines form a swarm; a dnsrr service on an overlay answers from two nodes', async (t) => {
  if (!(await needCluster(t))) return;
  const cluster = await startTestCluster({ size: 3 });
  t.after(() => cluster.close());
  const nodes = (await cluster.manager.docker.listNodes()) as Array<any>;
  assert.deepEqual(nodes.map((n) => n.Description.Hostname).sort(), ['node1', 'node2', 'node3']);
  assert.ok(nodes.every((n) => n.Status.State === 'ready'));
  const d = cluster.manager.docker;
  await d.createNetwork({ Name: 'probe-net', Driver: 'overlay', Attachable: true });
  await d.createService({}, {
    Name: 'web',
    TaskTemplate: {
      ContainerSpec: {
        Image: unpullable(BASE_IMAGE),
        Command: ['sh', '-c', 'hostname > /tmp/i; exec httpd -f -p 8080 -h /tmp'],
      },
      Networks: [{ Target: 'probe-net' }],
      Placement: { Constraints: ['node.hostname!=node3'] },
    },
    Mode: { Replicated: { Replicas: 2 } },
    EndpointSpec: { Mode: 'dnsrr' },
  } as any);
  const seen = new Set<string>();
  const until = Date.now() + 90_000;
  while (seen.size < 2 && Date.now() < until) {
    const out = await run(
      'docker',
      [
        '-H',
        `unix://${cluster.manager.socketPath}`,
        'run',
        '--rm',
        '--network',
        'probe-net',
        BASE_IMAGE,
        'sh',
        '-c',
        'for a in $(nslookup tasks.web 127.0.0.11 | sed -n "s/^Address: //p"); do busybox timeout 2 busybox wget -qO- http://$a:8080/i; done; true',
      ],
      { timeout: 30_000 },
    ).catch(() => ({ stdout: '' }));
    for (const line of out.stdout.split('\n')) if (line.trim()) seen.add(line.trim());
    if (seen.size < 2) await new Promise((r) => setTimeout(r, 1000));
  }
  assert.equal(seen.size, 2, `two tasks answered: ${[...seen].join(', ')}`);
  const tasks = (await d.listTasks({ filters: { service: ['web'], 'desired-state': ['running'] } })) as any[];
  assert.equal(new Set(tasks.map((x) => x.NodeID)).size, 2, 'on two nodes');
});
