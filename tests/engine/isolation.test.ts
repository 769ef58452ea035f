// Deliberate property: the control plane never shares a network with an app. Proven on the
// product itself: the image built from the repository's Dockerfile (scripts/docker/build-image.sh),
// running its own entrypoint (`svc serve`) on the svc-control network with the Docker socket, as
// scripts/docker/run-control-plane.sh runs it. That control plane deploys an app through its API;
// from inside the app's container it is then unreachable by name, by address and through its
// published port, while the same probes reach the app's own service (positive controls: a broken
// network or a broken probe cannot pass for isolation).
// (busybox-static's wget crashes with -T here, hence timeout(1).)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { promisify } from 'node:util';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { needControlImage } from '../_support/control-image.js';
import { Client, ADMIN, TEST_MASTER_KEY } from '../_support/server.js';
import { parseCompose } from '#lib/compose/index.js';
import {
  createEngine,
  planStack,
  stackUp,
  ensureControlNetwork,
  CONTROL_NETWORK,
  networkName,
  LABEL_ROLE,
} from '#lib/docker/index.js';
import { appName, cleanup, execIn, until } from './_helpers.js';
import { cleanupApp, waitStatus } from './_deploy.js';
import { SERVE_NODE_OPTIONS } from '#lib/install/texts.js';

const run = promisify(execFile);
const engine = createEngine({ socketPath: DOCKER_SOCKET });
const WEB_IMAGE = 'svc-test/web:isolation';
const apps = new Set<string>();
const deployed = new Set<string>();
const made: string[] = [];

after(async () => {
  for (const id of made)
    await engine.docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch(() => {});
  for (const a of deployed) await cleanupApp(engine, a);
  await cleanup(engine, apps);
});

/** Exit code and output of a command in a container (a probe). */
async function probe(id: string, cmd: string[]): Promise<{ ok: boolean; out: string }> {
  const r = await execIn(engine, id, cmd);
  return { ok: r.exitCode === 0, out: r.stdout.toString() + r.stderr };
}
const wget = (url: string) => ['timeout', '5', 'wget', '-q', '-O', '-', url];
const tcp = (host: string, port: number) => ['sh', '-c', 'nc -w 3 "$0" "$1" </dev/null', host, String(port)];

test('the real control plane in its container: an app it deployed cannot reach it by name, address or published port, yet reaches its own service', async (t) => {
  if (!(await needEngine(t))) return;
  const image = await needControlImage(t);
  if (!image) return;
  await ensureControlNetwork(engine);
  await run('sh', [
    '-c',
    'printf "FROM %s\\nRUN mkdir -p /www && echo app-own-service > /www/index.html\\nEXPOSE 8080\\nCMD [\\"httpd\\", \\"-f\\", \\"-p\\", \\"8080\\", \\"-h\\", \\"/www\\"]\\n" "$1" | docker build -q -t "$2" -',
    'sh',
    BASE_IMAGE,
    WEB_IMAGE,
  ]);

  // The product's own entrypoint and configuration, as run-control-plane.sh starts it.
  const ctlName = `svc-control-plane-t${randomBytes(3).toString('hex')}`;
  const ctl = await engine.docker.createContainer({
    name: ctlName,
    Image: image,
    Env: [
      `SVC_MASTER_KEY=${TEST_MASTER_KEY}`,
      'SVC_PASSWORD_COST=14',
      'SVC_AUTH_RATE_LIMIT=1000',
      'SVC_LOG_LEVEL=warn',
    ],
    Labels: { 'svc.managed': 'true', [LABEL_ROLE]: 'control' },
    HostConfig: {
      NetworkMode: CONTROL_NETWORK,
      Binds: [`${DOCKER_SOCKET}:/var/run/docker.sock`],
      PortBindings: { '9393/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
    },
  });
  made.push(ctl.id);
  await ctl.start();
  const ctlInfo = await ctl.inspect();
  assert.deepEqual(ctlInfo.Config.Entrypoint, [
    '/usr/local/bin/node',
    ...SERVE_NODE_OPTIONS,
    '/opt/svc/dist/runtime/cli.js',
  ]);
  assert.deepEqual(ctlInfo.Config.Cmd, ['serve']);
  assert.deepEqual(Object.keys(ctlInfo.NetworkSettings.Networks), [CONTROL_NETWORK]);
  const ctlIp = ctlInfo.NetworkSettings.Networks[CONTROL_NETWORK]!.IPAddress;
  const hostPort = Number(ctlInfo.NetworkSettings.Ports['9393/tcp']?.[0]?.HostPort);
  assert.ok(ctlIp, 'the control plane has an address on svc-control');
  assert.ok(hostPort > 0, 'the API is published on loopback');

  // The operator's path: the published loopback port.
  const api = new Client(`http://127.0.0.1:${hostPort}`);
  await until(
    'the control plane to answer',
    async () => {
      const state = (await ctl.inspect()).State;
      if (!state.Running)
        throw new Error(
          `the control plane exited (${state.ExitCode}): ${(await ctl.logs({ stdout: true, stderr: true })).toString().slice(-2000)}`,
        );
      // Before the server listens, the engine's port proxy may accept and then hold the
      // connection: each try gets its own deadline (a referenced timer).
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), 5_000);
      try {
        return (
          (await fetch(`${api.base}/api/health`, { signal: ac.signal }).catch(() => null))?.status === 200
        );
      } finally {
        clearTimeout(timer);
      }
    },
    120_000,
    250,
  );
  const token = (await execIn(engine, ctl.id, ['cat', '/var/lib/svc/data/setup.token'])).stdout
    .toString()
    .trim();
  assert.equal((await api.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
  assert.equal((await api.req('POST', '/api/auth/login', ADMIN)).status, 200);

  // Positive control on the control network: the listener accepts connections by name and address.
  const peer = await engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', '600'],
    Labels: { 'svc.managed': 'true' },
    HostConfig: { NetworkMode: CONTROL_NETWORK },
  });
  made.push(peer.id);
  await peer.start();
  assert.ok((await probe(peer.id, tcp(ctlName, 9393))).ok, 'reachable by name on svc-control');
  assert.ok((await probe(peer.id, tcp(ctlIp, 9393))).ok, 'reachable by address on svc-control');

  // The containerised control plane deploys an app through the engine socket.
  const name = appName('iso');
  deployed.add(name);
  const created = await api.req('POST', '/api/apps', { name, source: { type: 'image', image: WEB_IMAGE } });
  assert.equal(created.status, 201, created.text);
  const appId = created.body.app.id;
  const patched = await api.req('PATCH', `/api/apps/${appId}/services/app`, { port: 8080, health_path: '/' });
  assert.equal(patched.status, 200, patched.text);
  const dep = await api.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(dep.status, 202, dep.text);
  await waitStatus(api, appId, dep.body.deployment.id, ['succeeded']);
  // Made by the containerised control plane (its own instance id): asked of the engine by label.
  const [appContainer] = await engine.docker.listContainers({ filters: { label: [`svc.app=${name}`] } });
  assert.ok(appContainer, 'the deployment left a running container');
  const appInfo = await engine.docker.getContainer(appContainer.Id).inspect();
  assert.deepEqual(Object.keys(appInfo.NetworkSettings.Networks), [networkName(name)]);
  const appNet = appInfo.NetworkSettings.Networks[networkName(name)]!;
  const appNetInfo = await engine.docker.getNetwork(networkName(name)).inspect();
  assert.ok(
    !Object.keys(appNetInfo.Containers ?? {}).includes(ctl.id),
    'the control plane is not on the app network',
  );
  assert.ok(appNet.Gateway, 'the app network has a gateway (the host side of its bridge)');
  const a = appContainer.Id;

  // Positive controls from the app container: the same probes reach its own service.
  assert.ok((await probe(a, ['nslookup', 'app'])).ok, 'the app resolves its own service');
  const own = await probe(a, wget('http://app:8080/'));
  assert.ok(own.ok && own.out.includes('app-own-service'), `own service by name: ${own.out}`);
  assert.ok((await probe(a, wget(`http://${appNet.IPAddress}:8080/`))).ok, 'own service by address');
  assert.ok((await probe(a, tcp(appNet.IPAddress, 8080))).ok, 'own service over TCP');
  // ... and the host, through the gateway, where the host listens on that address.
  const hostSide = createServer((_q, s) => s.end('host-side')).listen(0, appNet.Gateway);
  await new Promise((r) => hostSide.once('listening', r));
  try {
    const port = (hostSide.address() as { port: number }).port;
    const viaGateway = await probe(a, wget(`http://${appNet.Gateway}:${port}/`));
    assert.ok(
      viaGateway.ok && viaGateway.out.includes('host-side'),
      `the host through the gateway: ${viaGateway.out}`,
    );
  } finally {
    await new Promise((r) => hostSide.close(r));
  }

  // The control plane: by name, by address, over TCP, and through its published port.
  const lookup = await probe(a, ['nslookup', ctlName]);
  assert.equal(lookup.ok, false, `name resolved from the app: ${lookup.out}`);
  assert.equal((await probe(a, wget(`http://${ctlName}:9393/api/health`))).ok, false, 'reachable by name');
  const byIp = await probe(a, wget(`http://${ctlIp}:9393/api/health`));
  assert.equal(byIp.ok, false, `reachable by address ${ctlIp}: ${byIp.out}`);
  assert.equal(
    (await probe(a, tcp(ctlIp, 9393))).ok,
    false,
    'TCP connect to the control plane address succeeded',
  );
  const viaHost = await probe(a, wget(`http://${appNet.Gateway}:${hostPort}/api/health`));
  assert.equal(viaHost.ok, false, `reachable through the host-published port: ${viaHost.out}`);
  // Still serving the operator all along.
  assert.equal((await api.req('GET', '/api/health')).status, 200);
});

test('an app can never take over the control network, even when named "control"', async (t) => {
  if (!(await needEngine(t))) return;
  await ensureControlNetwork(engine);
  const parsed = parseCompose(`services:\n  web:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "600"]\n`);
  const plan = await planStack(parsed.model!, { app: 'control' });
  assert.ok(plan.ok);
  assert.equal(plan.plan.network, CONTROL_NETWORK);
  await assert.rejects(
    stackUp(engine, plan.plan, { deploymentId: 'd1' }),
    /does not belong to app "control"/,
  );
  const net = await engine.docker.getNetwork(CONTROL_NETWORK).inspect();
  assert.deepEqual(
    Object.values(net.Containers ?? {}).filter((c: { Name?: string }) =>
      c.Name?.startsWith('svc-control-web'),
    ),
    [],
  );
});
