// (busybox-static's wget crashes with -T here, hence timeout(1).)
// Deliberate property: the control plane never shares a network with an app. The control
// plane's container sits on svc-control; an app container can reach it neither by name nor by
// address. A probe on svc-control proves the listener itself answers, so the failures from the
// app side are the isolation and not a dead listener.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { parseCompose } from '../../lib/compose/index.js';
import { createEngine, planStack, stackUp, ensureControlNetwork, isNotFound, CONTROL_NETWORK, networkName, LABEL_ROLE } from '../../lib/docker/index.js';
import { appName, cleanup, execIn, until } from './_helpers.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
const CONTROL_IMAGE = process.env.SVC_CONTROL_IMAGE ?? 'svc/control-plane:latest';
const apps = new Set<string>();
const made: string[] = [];


after(async () => {
  for (const id of made) await engine.docker.getContainer(id).remove({ force: true, v: true }).catch(() => {});
  await cleanup(engine, apps);
});

async function hasImage(ref: string): Promise<boolean> {
  try {
    await engine.docker.getImage(ref).inspect();
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

test('an app container cannot reach the control plane container by name or by address', async (t) => {
  if (!(await needEngine(t))) return;
  await ensureControlNetwork(engine);
  const ctlName = `svc-control-plane-t${randomBytes(3).toString('hex')}`;
  // The real image when it was built (scripts/docker/build-image.sh), serving on its port with its
  // own node; else a busybox listener with the same name, network, labels and port layout.
  const real = await hasImage(CONTROL_IMAGE);
  const ctl = await engine.docker.createContainer({
    name: ctlName,
    Image: real ? CONTROL_IMAGE : BASE_IMAGE,
    ...(real
      ? { Entrypoint: ['/usr/local/bin/node', '-e', "require('node:http').createServer((q, s) => s.end('control')).listen(9393, '0.0.0.0')"], Cmd: [] }
      : { Cmd: ['sh', '-c', 'mkdir -p /www && echo control > /www/index.html && exec httpd -f -p 9393 -h /www'] }),
    Labels: { 'svc.managed': 'true', [LABEL_ROLE]: 'control' },
    ExposedPorts: { '9393/tcp': {} },
    HostConfig: { NetworkMode: CONTROL_NETWORK, PortBindings: { '9393/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
  made.push(ctl.id);
  await ctl.start();
  const ctlInfo = await ctl.inspect();
  const ctlIp = ctlInfo.NetworkSettings.Networks[CONTROL_NETWORK].IPAddress;
  const hostPort = ctlInfo.NetworkSettings.Ports['9393/tcp']?.[0]?.HostPort;
  assert.ok(ctlIp);
  assert.deepEqual(Object.keys(ctlInfo.NetworkSettings.Networks), [CONTROL_NETWORK]);

  // Positive control: from the control network, the listener answers by name and by address.
  const probe = await engine.docker.createContainer({ Image: BASE_IMAGE, Cmd: ['sleep', '600'], Labels: { 'svc.managed': 'true' }, HostConfig: { NetworkMode: CONTROL_NETWORK } });
  made.push(probe.id);
  await probe.start();
  const byNameOk = await until('control plane listening', async () => {
    const r = await execIn(engine, probe.id, ['timeout', '5', 'wget', '-q', '-O', '-', `http://${ctlName}:9393/`]);
    return r.exitCode === 0 ? r : null;
  });
  assert.match(byNameOk.stdout.toString(), /control/);
  assert.equal((await execIn(engine, probe.id, ['timeout', '5', 'wget', '-q', '-O', '-', `http://${ctlIp}:9393/`])).exitCode, 0);

  // An app stack, brought up by the engine layer exactly as deployments do.
  const app = appName('iso');
  apps.add(app);
  const parsed = parseCompose(`services:\n  web:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "600"]\n`);
  const plan = await planStack(parsed.model!, { app });
  assert.ok(plan.ok);
  const up = await stackUp(engine, plan.plan, { deploymentId: 'd1' });
  const appId = up.services[0].containerId;
  const appInfo = await engine.docker.getContainer(appId).inspect();
  assert.deepEqual(Object.keys(appInfo.NetworkSettings.Networks), [networkName(app)]);
  const gateway = appInfo.NetworkSettings.Networks[networkName(app)].Gateway;
  const appNet = await engine.docker.getNetwork(networkName(app)).inspect();
  assert.ok(!Object.keys(appNet.Containers ?? {}).includes(ctl.id), 'the control plane is not on the app network');

  await until('app running', async () => (await engine.docker.getContainer(appId).inspect()).State.Running);
  const lookup = await execIn(engine, appId, ['nslookup', ctlName]);
  assert.notEqual(lookup.exitCode, 0, `name resolved from the app: ${lookup.stdout.toString()}`);
  const byName = await execIn(engine, appId, ['timeout', '5', 'wget', '-q', '-O', '-', `http://${ctlName}:9393/`]);
  assert.notEqual(byName.exitCode, 0, 'reachable by name');
  const byIp = await execIn(engine, appId, ['timeout', '5', 'wget', '-q', '-O', '-', `http://${ctlIp}:9393/`]);
  assert.notEqual(byIp.exitCode, 0, `reachable by address ${ctlIp}: ${byIp.stdout.toString()}`);
  const tcp = await execIn(engine, appId, ['sh', '-c', `nc -w 3 ${ctlIp} 9393 </dev/null`]);
  assert.notEqual(tcp.exitCode, 0, 'TCP connect to the control plane address succeeded');
  if (hostPort && gateway) {
    // Published on loopback only: the host side of the app's bridge does not forward it either.
    const viaHost = await execIn(engine, appId, ['timeout', '5', 'wget', '-q', '-O', '-', `http://${gateway}:${hostPort}/`]);
    assert.notEqual(viaHost.exitCode, 0, 'reachable through the host-published port');
  }
});

test('an app can never take over the control network, even when named "control"', async (t) => {
  if (!(await needEngine(t))) return;
  await ensureControlNetwork(engine);
  const parsed = parseCompose(`services:\n  web:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "600"]\n`);
  const plan = await planStack(parsed.model!, { app: 'control' });
  assert.ok(plan.ok);
  assert.equal(plan.plan.network, CONTROL_NETWORK);
  await assert.rejects(stackUp(engine, plan.plan, { deploymentId: 'd1' }), /does not belong to app "control"/);
  const net = await engine.docker.getNetwork(CONTROL_NETWORK).inspect();
  assert.deepEqual(Object.values(net.Containers ?? {}).filter((c: { Name?: string }) => c.Name?.startsWith('svc-control-web')), []);
});
