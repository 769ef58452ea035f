// The plain-HTTP fallback listens on every address; an app container must still not reach the
// API through its network's gateway. Played from real containers on engine networks: one made
// before the control plane boots, one after (learned from the engine's network events). Positive
// controls: a plain host server on the same gateway answers the same probe, and the operator's
// loopback path keeps working.
import { bridgeHostAddress } from '#lib/docker/bridge.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { startTestServer, type TestServer } from '../_support/server.js';
import { createEngine } from '#lib/docker/index.js';
import { execIn, until } from './_helpers.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
const TAG = `subnets-${randomBytes(3).toString('hex')}`;
const networks: string[] = [];
const containers: string[] = [];
let server: TestServer | null = null;
const METRICS_TOKEN = 'm'.repeat(24);

after(async () => {
  await server?.stop();
  for (const id of containers)
    await engine.docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch(() => {});
  for (const n of networks)
    await engine.docker
      .getNetwork(n)
      .remove()
      .catch(() => {});
});

async function network(suffix: string): Promise<{ name: string; gateway: string }> {
  const name = `${TAG}-${suffix}`;
  await engine.docker.createNetwork({ Name: name, Driver: 'bridge', Labels: { 'svc.test': TAG } });
  networks.push(name);
  // The host side of its bridge (derived: the engine may report no gateway, lib/docker/bridge.ts).
  const gateway = bridgeHostAddress(await engine.docker.getNetwork(name).inspect());
  assert.ok(gateway, `network ${name} has an IPv4 subnet`);
  return { name, gateway };
}

async function container(net: string): Promise<string> {
  const c = await engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', '600'],
    Labels: { 'svc.test': TAG },
    HostConfig: { NetworkMode: net },
  });
  containers.push(c.id);
  await c.start();
  return c.id;
}

/** busybox-static's wget crashes with -T here, hence timeout(1). */
async function fetchFrom(id: string, url: string): Promise<{ ok: boolean; out: string }> {
  const r = await execIn(engine, id, ['timeout', '5', 'wget', '-q', '-O', '-', url]);
  return { ok: r.exitCode === 0, out: r.stdout.toString() + r.stderr };
}

async function hostSide(): Promise<{ port: number; close(): Promise<void> }> {
  const s = createServer((_q, res) => res.end('host-side')).listen(0, '0.0.0.0');
  await new Promise((r) => s.once('listening', r));
  return { port: (s.address() as AddressInfo).port, close: () => new Promise((r) => s.close(() => r())) };
}

test('a container on an engine network cannot reach the API through its gateway; the refusals are counted in /metrics', async (t) => {
  if (!(await needEngine(t))) return;
  const before = await network('a');
  const early = await container(before.name);
  server = await startTestServer({ SVC_HOST: '0.0.0.0', SVC_METRICS_TOKEN: METRICS_TOKEN });
  const port = server.running.port;
  const control = await hostSide();
  try {
    // Positive control: the gateway path works for an ordinary host server.
    const plain = await fetchFrom(early, `http://${before.gateway}:${control.port}/`);
    assert.ok(plain.ok && plain.out.includes('host-side'), `host server through the gateway: ${plain.out}`);
    const api = await fetchFrom(early, `http://${before.gateway}:${port}/api/health`);
    assert.equal(api.ok, false, `the API answered a container through its gateway: ${api.out}`);
    assert.doesNotMatch(api.out, /"status"/);

    // A network created after boot is learned from the engine's events.
    const later = await network('b');
    const late = await container(later.name);
    const plainLate = await fetchFrom(late, `http://${later.gateway}:${control.port}/`);
    assert.ok(plainLate.ok, `host server through the new gateway: ${plainLate.out}`);
    await until(
      'the API refuses the network made after boot',
      async () => !(await fetchFrom(late, `http://${later.gateway}:${port}/api/health`)).ok,
      60_000,
      500,
    );
  } finally {
    await control.close();
  }

  // The operator's loopback path still answers, and the refusals show in /metrics.
  const health = await fetch(`http://127.0.0.1:${port}/api/health`);
  assert.equal(health.status, 200);
  const metrics = await fetch(`http://127.0.0.1:${port}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  assert.equal(metrics.status, 200);
  const m = /^svc_http_connections_refused_total (\d+)$/m.exec(await metrics.text());
  assert.ok(m, 'svc_http_connections_refused_total is exposed');
  assert.ok(Number(m[1]) >= 2, `refused connections counted: ${m[1]}`);
});
