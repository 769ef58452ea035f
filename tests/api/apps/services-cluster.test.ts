// PATCH /api/apps/{id}/services/{name} with cluster settings: replicas 0..50 and placement
// constraints of the three documented forms only; anything else is a 400 naming the problem, and
// nothing is stored.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminClient, Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';

let s: TestApp;
let c: Client;
let appId: string;

before(async () => {
  s = await startTestApp({ SVC_CLUSTER: 'swarm', SVC_REGISTRY: '127.0.0.1:5000' });
  c = await adminClient(s);
  const r = await c.req('POST', '/api/apps', {
    name: `sc-${randomBytes(3).toString('hex')}`,
    source: { type: 'image', image: 'svc-test/busybox:latest' },
  });
  assert.equal(r.status, 201, r.text);
  appId = r.body.app.id;
});
after(async () => {
  await s?.stop();
});

test('replicas and placement are stored and answered', async () => {
  const r = await c.req('PATCH', `/api/apps/${appId}/services/app`, {
    replicas: 3,
    placement: {
      constraints: ['node.labels.zone==eu-1', 'node.hostname != node2', 'node.role==worker'],
    },
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.replicas, 3);
  assert.deepEqual(r.body.placement.constraints, [
    'node.labels.zone==eu-1',
    'node.hostname!=node2',
    'node.role==worker',
  ]);
  const zero = await c.req('PATCH', `/api/apps/${appId}/services/app`, { replicas: 0 });
  assert.equal(zero.status, 200, zero.text);
  assert.equal(zero.body.replicas, 0);
  assert.equal(zero.body.placement.constraints.length, 3, 'placement kept');
});

test('bad replicas and constraints are 400 with the reason, and change nothing', async () => {
  const before = (await c.req('PATCH', `/api/apps/${appId}/services/app`, { replicas: 2 })).body;
  const bad: Array<[unknown, RegExp]> = [
    [{ replicas: 51 }, /replicas/],
    [{ replicas: -1 }, /replicas/],
    [{ replicas: 1.5 }, /replicas/],
    [{ replicas: '2' }, /replicas/],
    [{ placement: { constraints: ['node.platform.os==linux'] } }, /node\.labels/],
    [{ placement: { constraints: ['node.id==abc'] } }, /node\.labels/],
    [{ placement: { constraints: ['engine.labels.x==y'] } }, /node\.labels/],
    [{ placement: { constraints: ['node.role==boss'] } }, /manager or worker/],
    [{ placement: { constraints: ['node.hostname==a b'] } }, /node\.labels|characters/],
    [{ placement: { constraints: ['node.labels.zone==x;rm -rf /'] } }, /node\.labels|characters/],
    [{ placement: { constraints: ['node.labels.zone=x'] } }, /node\.labels/],
    [{ placement: { constraints: 'node.role==worker' } }, /constraints/],
    [{ placement: { constraints: [], preferences: [] } }, /preferences|unrecognized/i],
  ];
  for (const [body, why] of bad) {
    const r = await c.req('PATCH', `/api/apps/${appId}/services/app`, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request', r.text);
    assert.match(JSON.stringify(r.body), why, `${JSON.stringify(body)}: ${r.text}`);
  }
  const now = (await c.req('PATCH', `/api/apps/${appId}/services/app`, { port: 8080 })).body;
  assert.equal(now.replicas, before.replicas);
  assert.deepEqual(now.placement, before.placement);
});
