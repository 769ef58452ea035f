// The pure parts of cluster mode: which constraints pass, how a planned service reads in Swarm's
// terms, and where an image goes in the registry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constraintProblem, normalizeConstraint } from '#lib/cluster/settings.js';
import { httpHealthCheck, serviceSpec } from '#lib/cluster/spec.js';
import { nodeMatches } from '#lib/cluster/rollout.js';
import { splitLocalRef } from '#lib/cluster/images.js';
import { createEngine, planStack } from '#lib/docker/index.js';
import { parseCompose } from '#lib/compose/index.js';

test('only the three constraint forms pass', () => {
  for (const ok of ['node.labels.zone==eu', 'node.hostname!=n2', 'node.role==manager', 'node.role == worker'])
    assert.equal(constraintProblem(ok), null, ok);
  for (const bad of [
    'node.id==x',
    'node.platform.os==linux',
    'engine.labels.a==b',
    'node.role==x',
    'node.labels.a==b c',
    'node.labels.a==$(x)',
    '',
  ])
    assert.ok(constraintProblem(bad), bad);
  assert.equal(normalizeConstraint('node.role == worker'), 'node.role==worker');
});

test('nodes match constraints as the swarm reads them', () => {
  const n = {
    ID: 'abc',
    Spec: { Role: 'worker', Labels: { zone: 'eu' } },
    Description: { Hostname: 'node2' },
  };
  assert.ok(
    nodeMatches(n, ['node.labels.zone==eu', 'node.hostname!=node1', 'node.role==worker', 'node.id==abc']),
  );
  assert.ok(!nodeMatches(n, ['node.labels.zone==us']));
  assert.ok(!nodeMatches(n, ['node.role==manager']));
});

test('registry paths keep the repository and drop a registry host', () => {
  assert.deepEqual(splitLocalRef('svc/app-web:01abc'), { path: 'svc/app-web', tag: '01abc' });
  assert.deepEqual(splitLocalRef('nginx'), { path: 'library/nginx', tag: 'latest' });
  assert.deepEqual(splitLocalRef('reg.example:5000/team/x:1'), { path: 'team/x', tag: '1' });
});

test('a planned service becomes a dnsrr, start-first service; host ports make it stop-first; binds are refused', async () => {
  const engine = createEngine({ socketPath: '/nonexistent' });
  const plan = async (text: string) => {
    const m = parseCompose(text, { env: {} }).model!;
    const p = await planStack(m, { app: 'demo' });
    assert.ok(p.ok);
    return p.plan;
  };
  const p1 = await plan('services:\n  web:\n    image: x\n    mem_limit: 64m\n');
  const s1 = serviceSpec(engine, p1, p1.services[0]!, {
    deploymentId: 'd1',
    image: 'r/x@sha256:00',
    replicas: 2,
    constraints: ['node.role==worker'],
    healthCheck: httpHealthCheck('curl', 8080, '/health'),
  }) as any;
  assert.equal(s1.Name, 'svc-demo-web');
  assert.equal(s1.EndpointSpec.Mode, 'dnsrr');
  assert.equal(s1.UpdateConfig.Order, 'start-first');
  assert.equal(s1.UpdateConfig.FailureAction, 'rollback');
  assert.equal(s1.Mode.Replicated.Replicas, 2);
  assert.deepEqual(s1.TaskTemplate.Networks, [{ Target: 'svc-demo', Aliases: ['web'] }]);
  assert.equal(s1.TaskTemplate.Resources.Limits.MemoryBytes, 64 * 1024 * 1024);
  assert.match(
    s1.TaskTemplate.ContainerSpec.HealthCheck.Test[1],
    /^curl .*'http:\/\/127\.0\.0\.1:8080\/health'$/,
  );
  for (const k of ['svc.app', 'svc.service', 'svc.deployment', 'svc.instance']) assert.ok(s1.Labels[k], k);
  const p2 = await plan('services:\n  web:\n    image: x\n    ports: ["8081:80"]\n');
  const s2 = serviceSpec(engine, p2, p2.services[0]!, {
    deploymentId: 'd',
    image: 'x',
    replicas: 1,
    constraints: [],
  }) as any;
  assert.deepEqual(s2.EndpointSpec.Ports, [
    { Protocol: 'tcp', TargetPort: 80, PublishedPort: 8081, PublishMode: 'host' },
  ]);
  assert.equal(s2.UpdateConfig.Order, 'stop-first');
  const dir = mkdtempSync(join(tmpdir(), 'svc-bind-'));
  const text = `services:\n  web:\n    image: x\n    volumes: ["${dir}:/srv"]\n`;
  const m3 = parseCompose(text, { env: {}, allowedBindRoots: [dir] }).model!;
  const p3 = await planStack(m3, { app: 'demo', allowedBindRoots: [dir] });
  rmSync(dir, { recursive: true, force: true });
  assert.ok(p3.ok);
  assert.throws(
    () =>
      serviceSpec(engine, p3.plan, p3.plan.services[0]!, {
        deploymentId: 'd',
        image: 'x',
        replicas: 1,
        constraints: [],
      }),
    /bind mounts/,
  );
});
