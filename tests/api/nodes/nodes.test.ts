// The nodes routes in-process: single-host mode refuses each of them with the contract's conflict,
// the patch body is validated (charset, bounds, reserved labels) before anything is asked of an
// engine, and the join command's line is built from quoted, checked parts. Against a real swarm:
// tests/cluster/nodes.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { joinCommand } from '#lib/cluster/join.js';

let s: TestApp;
let c: Client;
const NODE = 'abcdefghijklmnopqrstuvwxy';
const TOKEN = `SWMTKN-1-${'a1'.repeat(25)}-${'b2'.repeat(12)}c`;

before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
});
after(() => s?.stop());

test('single-host mode: every nodes route answers 409 conflict and says cluster mode is off', async () => {
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const calls: Array<[string, string, unknown?]> = [
    ['GET', '/api/nodes'],
    ['POST', '/api/nodes/join'],
    ['PATCH', `/api/nodes/${NODE}`, { availability: 'drain' }],
    ['DELETE', `/api/nodes/${NODE}`],
  ];
  for (const [method, path, body] of calls) {
    const r = await c.req(method, path, body);
    assert.equal(r.status, 409, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.code, 'conflict');
    assert.match(r.body.error, /^cluster mode is off/);
  }
  const info = await c.req('GET', '/api/instance/info');
  assert.deepEqual(info.body.cluster, { mode: 'off' });
  const posture = await c.req('GET', '/api/security/posture');
  assert.ok(!posture.body.items.some((i: { code: string }) => i.code.startsWith('cluster_')));
});

test('patch validation: labels charset, bounds, reserved prefix; availability enum; a node id', async () => {
  const bad: Array<[string, unknown]> = [
    [NODE, {}],
    [NODE, { availability: 'gone' }],
    [NODE, { labels: { 'svc.pin': 'x' } }],
    [NODE, { labels: { 'a b': 'x' } }],
    [NODE, { labels: { zone: "it's" } }],
    [NODE, { labels: { zone: 'x'.repeat(129) } }],
    [NODE, { labels: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }],
    [NODE, { labels: { zone: 'a' }, extra: true }],
    ['NOT-A-NODE', { availability: 'drain' }],
  ];
  for (const [id, body] of bad) {
    const r = await c.req('PATCH', `/api/nodes/${id}`, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
  }
});

test('the join line: quoted parts, the CA as base64, the token and the manager; odd parts refused', () => {
  const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const line = joinCommand({
    token: TOKEN,
    manager: '10.0.0.11:2377',
    registry: '10.0.0.11:5000',
    caPem: ca,
  });
  const b64 = Buffer.from(ca).toString('base64');
  assert.equal(
    line,
    `mkdir -p '/etc/docker/certs.d/10.0.0.11:5000' && printf %s '${b64}' | base64 -d > ` +
      `'/etc/docker/certs.d/10.0.0.11:5000/ca.crt' && docker swarm join --token '${TOKEN}' '10.0.0.11:2377'`,
  );
  // With the own registry's account: the node's engine logs in before it joins (anonymous pulls are refused).
  const withLogin = joinCommand({
    token: TOKEN,
    manager: '10.0.0.11:2377',
    registry: '10.0.0.11:5000',
    caPem: ca,
    login: { username: 'svc', password: "p'w; rm -rf /" },
  });
  const pw = Buffer.from("p'w; rm -rf /").toString('base64');
  assert.ok(
    withLogin.includes(
      ` && printf %s '${pw}' | base64 -d | docker login --username 'svc' --password-stdin '10.0.0.11:5000' && docker swarm join`,
    ),
    withLogin,
  );
  assert.ok(!withLogin.includes('rm -rf'), 'the password only as base64');
  assert.equal(
    joinCommand({ token: TOKEN, manager: '10.0.0.11:2377', registry: null, caPem: null }),
    `docker swarm join --token '${TOKEN}' '10.0.0.11:2377'`,
  );
  for (const parts of [
    { token: `${TOKEN}'; rm -rf /`, manager: '10.0.0.11:2377' },
    { token: TOKEN, manager: "x' y:2377" },
    { token: TOKEN, manager: '10.0.0.11:2377', registry: "a'b:5000", caPem: ca },
  ])
    assert.throws(() => joinCommand({ registry: null, caPem: null, ...parts }));
});
