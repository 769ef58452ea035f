// App containers and builds cannot reach link-local addresses (cloud metadata) unless
// SVC_ALLOW_METADATA=true (lib/net/metadata-guard.ts). A stand-in metadata service listens on
// 169.254.169.254 (an address of this host, reached through it as a cloud's metadata address is),
// and a control plane boots. From a real container on an engine network, and from a
// real build's RUN step on the default bridge: the metadata address answers nothing, while the
// host's ordinary address does. Positive control: a container on a bridge whose interface is not
// an engine network's (a custom bridge name, which app networks never get) still reaches the
// stand-in, so the refusal is the guard's. The posture says which, and SVC_ALLOW_METADATA=true
// turns it into a warning.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { missing } from '../_support/ci.js';
import { adminClient, startTestServer, type TestServer } from '../_support/server.js';
import { buildImage, createEngine } from '#lib/docker/index.js';
import { bridgeHostAddress } from '#lib/docker/bridge.js';
import { execIn } from './_helpers.js';
import { poll } from '../_support/wait.js';

const run = promisify(execFile);
const engine = createEngine({ socketPath: DOCKER_SOCKET });
const TAG = `metadata-${randomBytes(3).toString('hex')}`;
const METADATA = '169.254.169.254';
const cleanups: Array<() => Promise<unknown>> = [];
let server: TestServer | null = null;

after(async () => {
  await server?.stop();
  for (const fn of cleanups.reverse()) await fn().catch(() => {});
});

function listen(host: string, body: string): Promise<Server> {
  const s = createServer((_q, res) => res.end(body)).listen(0, host);
  cleanups.push(() => new Promise((r) => s.close(r)));
  return new Promise((r) => s.once('listening', () => r(s)));
}
const portOf = (s: Server) => (s.address() as AddressInfo).port;

async function containerOn(net: string, options: Record<string, string> = {}): Promise<string> {
  await engine.docker.createNetwork({
    Name: net,
    Driver: 'bridge',
    Options: options,
    Labels: { 'svc.test': TAG },
  });
  cleanups.push(() => engine.docker.getNetwork(net).remove());
  const c = await engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', '600'],
    Labels: { 'svc.test': TAG },
    HostConfig: { NetworkMode: net },
  });
  cleanups.push(() => c.remove({ force: true, v: true }));
  await c.start();
  return c.id;
}

/** busybox-static's wget crashes with -T here, hence timeout(1). */
async function fetchFrom(id: string, url: string): Promise<{ ok: boolean; out: string }> {
  const r = await execIn(engine, id, ['timeout', '4', 'wget', '-q', '-O', '-', url]);
  return { ok: r.exitCode === 0, out: r.stdout.toString() + r.stderr };
}

/** The posture's row once the boot's guard has run (it runs beside the boot, not before it). */
async function linkLocalRow(s: TestServer, want: string) {
  const c = await adminClient(s);
  const row = async () => {
    const r = await c.req('GET', '/api/security/posture');
    assert.equal(r.status, 200, r.text);
    return r.body.items.find((i: { code: string }) => i.code === 'link_local');
  };
  return poll(
    'the link-local row',
    async () => ((await row()).status === want ? row() : null),
    30_000,
    200,
  ).catch(async () => row());
}

test('link-local is refused from an engine network and from a build, unless SVC_ALLOW_METADATA=true', async (t) => {
  if (!(await needEngine(t))) return;
  if (process.getuid?.() !== 0) return void missing(t, 'needs root (nftables, an address on the host)');
  // The stand-in's address on the host's loopback (this kernel has no dummy interfaces): a packet
  // from a container still arrives on its bridge, as one for a cloud's metadata address does.
  const added = await run('ip', ['addr', 'add', `${METADATA}/32`, 'dev', 'lo']).then(
    () => true,
    (e: Error) => (/File exists/.test(e.message) ? false : Promise.reject(e)),
  );
  if (added) cleanups.push(() => run('ip', ['addr', 'del', `${METADATA}/32`, 'dev', 'lo']));
  const metadata = await listen(METADATA, 'instance-credentials');
  const hostSide = await listen('0.0.0.0', 'host-side');
  const url = `http://${METADATA}:${portOf(metadata)}/`;

  const appNet = await containerOn(`${TAG}-app`);
  const outside = await containerOn(`${TAG}-plain`, {
    'com.docker.network.bridge.name': `svcmdo${process.pid % 10000}`,
  });

  server = await startTestServer({});
  const row = await linkLocalRow(server, 'ok');
  assert.equal(row.status, 'ok', JSON.stringify(row));
  assert.match(row.reason, /cannot reach link-local addresses/);

  // Positive control: the stand-in answers a container whose bridge is no engine network's.
  const control = await fetchFrom(outside, url);
  assert.ok(control.ok && control.out.includes('instance-credentials'), `positive control: ${control.out}`);
  // From an engine network: the host's ordinary address answers, the metadata address does not.
  const gw = bridgeHostAddress(await engine.docker.getNetwork(`${TAG}-app`).inspect());
  const plain = await fetchFrom(appNet, `http://${gw}:${portOf(hostSide)}/`);
  assert.ok(plain.ok && plain.out.includes('host-side'), `the host's own address: ${plain.out}`);
  const refused = await fetchFrom(appNet, url);
  assert.equal(refused.ok, false, `an app container reached the metadata address: ${refused.out}`);
  assert.ok(!refused.out.includes('instance-credentials'));

  // A build's RUN step (the default bridge): the same.
  const dir = await mkdtemp(join(tmpdir(), 'svc-metadata-build-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const bridgeHost = bridgeHostAddress(await engine.docker.getNetwork('bridge').inspect());
  await writeFile(
    join(dir, 'Dockerfile'),
    [
      `FROM ${BASE_IMAGE}`,
      `RUN timeout 4 wget -q -O - http://${bridgeHost}:${portOf(hostSide)}/ | grep -q host-side`,
      `RUN if timeout 4 wget -q -O - ${url}; then echo METADATA-REACHED; exit 1; else echo METADATA-BLOCKED; fi`,
    ].join('\n') + '\n',
  );
  const lines: string[] = [];
  const tag = `svc-test/${TAG}:build`;
  cleanups.push(() => engine.docker.getImage(tag).remove({ force: true }));
  await buildImage(engine, {
    contextDir: dir,
    tag,
    labels: { 'svc.test': TAG },
    onLog: (l) => lines.push(l),
  });
  assert.match(lines.join('\n'), /METADATA-BLOCKED/);

  // Allowed: the posture says so (the boot removed the table).
  await server.stop();
  server = await startTestServer({ SVC_ALLOW_METADATA: 'true' });
  const allowed = await linkLocalRow(server, 'warning');
  assert.equal(allowed.status, 'warning', JSON.stringify(allowed));
  assert.match(allowed.reason, /SVC_ALLOW_METADATA=true/);
  await server.stop();
  // Leave the host as the other tests expect it: blocked.
  server = await startTestServer({});
  assert.equal((await linkLocalRow(server, 'ok')).status, 'ok');
});
