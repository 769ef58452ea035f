// The proxy in cluster mode on a real three-node swarm: the control plane (SVC_CLUSTER=swarm) runs
// Caddy as a container on the manager, on the app's overlay network, and Caddy follows the app's
// tasks through the engine's DNS. The app's Swarm service is made by the test (the swarm deploy
// path is not used here), named and labelled as the product names them.
// The tests run in order and share one cluster, one control plane and one app; the last one kills
// a node.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { needCluster, startTestCluster, type TestCluster } from '../_support/cluster.js';
import { needStackImages } from '../_support/stackimages.js';
import { bounded, poll } from '../_support/wait.js';
import {
  caddyConfig,
  createApp,
  createService,
  get,
  load,
  startEdgeLab,
  stopLoads,
  taskNodes,
  tasksSettled,
  updateService,
  type EdgeLab,
} from '../_support/cluster-edge.js';
import {
  LABEL_APP,
  LABEL_NETWORK,
  LABEL_ROLE,
  networkName,
  ownerLabels,
  swarmServiceName,
} from '#lib/docker/index.js';
import { EDGE_CONTAINER, EDGE_VOLUME } from '#lib/proxy/cluster.js';

let cluster: TestCluster | null = null;
let lab: EdgeLab | null = null;
let app: { id: string; name: string; host: string };
const SERVICE = () => swarmServiceName(app.name, 'app');

after(async () => {
  // Bounded: a failed test must not keep the run from ending.
  await stopLoads();
  await bounded('stopping the control plane', lab?.server.stop(), 60_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await cluster?.close();
});

async function ready(t: import('node:test').TestContext): Promise<boolean> {
  if (!(await needCluster(t))) return false;
  if (!(await needStackImages(t))) return false;
  if (lab) return true;
  cluster ??= await startTestCluster({ size: 3 });
  lab = await startEdgeLab(cluster);
  app = await createApp(lab, 'web');
  await createService(lab, cluster.manager.docker, app, {
    replicas: 2,
    constraints: ['node.hostname!=node3'],
  });
  return true;
}

/** Distinct task hostnames answering through the proxy, within `n` requests. */
async function answering(n: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = await get(cluster!.manager.addr, app.host);
    if (r.ok) seen.add(r.body);
  }
  return seen;
}

test('Caddy runs as an owned container on the manager, on the app network, and both tasks answer through it', async (t) => {
  if (!(await ready(t))) return;
  const d = cluster!.manager.docker;
  const info = await d.getContainer(EDGE_CONTAINER).inspect();
  assert.equal(info.Config.Labels[LABEL_ROLE], 'edge');
  for (const [k, v] of Object.entries(ownerLabels(lab!.server.env.engine)))
    assert.equal(info.Config.Labels[k], v);
  assert.equal(info.HostConfig.RestartPolicy?.Name, 'unless-stopped');
  // The admin endpoint is published on SVC_CADDY_ADMIN's address only; 80 on every address.
  assert.deepEqual(info.HostConfig.PortBindings?.['2019/tcp'], [
    { HostIp: cluster!.manager.addr, HostPort: '2019' },
  ]);
  assert.equal(info.HostConfig.PortBindings?.['80/tcp']?.[0]?.HostPort, '80');
  assert.ok(
    info.Mounts.some((m: any) => m.Type === 'volume' && m.Name === EDGE_VOLUME && m.Destination === '/data'),
  );
  assert.ok(Object.keys(info.NetworkSettings.Networks).includes(networkName(app.name)), 'on the app network');

  const seen = await poll(
    'both tasks answering',
    async () => {
      const s = await answering(8);
      return s.size === 2 ? s : null;
    },
    120_000,
    500,
  );
  assert.equal(seen.size, 2);
  const state = lab!.server.env.edge.proxy.state();
  assert.equal(state.synced, true, state.error);
  // The route names the service's tasks, not addresses.
  const cfg = await caddyConfig(lab!.adminUrl);
  assert.match(cfg, new RegExp(`"name":"tasks\\.${SERVICE()}"`));
});

test('the edge joins the network of each app in the rows and leaves those of apps not in them', async (t) => {
  if (!(await ready(t))) return;
  const d = cluster!.manager.docker;
  const engine = lab!.server.env.engine;
  const labels = (a: string) => ({ ...ownerLabels(engine), [LABEL_APP]: a, [LABEL_NETWORK]: 'default' });
  await d.createNetwork({
    Name: networkName('ghost'),
    Driver: 'overlay',
    Attachable: true,
    Labels: labels('ghost'),
  });
  const other = await createApp(lab!, 'other');
  await d.createNetwork({
    Name: networkName(other.name),
    Driver: 'overlay',
    Attachable: true,
    Labels: labels(other.name),
  });
  const nets = async () =>
    Object.keys((await d.getContainer(EDGE_CONTAINER).inspect()).NetworkSettings.Networks);
  // A sync asked for while another runs may be folded into it: ask until one ran after the change.
  const syncUntil = (what: string, ok: (n: string[]) => boolean) =>
    poll(
      what,
      async () => {
        await lab!.server.env.edge.proxy.sync('test');
        return ok(await nets());
      },
      60_000,
      500,
    );
  await syncUntil('the edge on the new app network', (n) => n.includes(networkName(other.name)));
  assert.ok(!(await nets()).includes(networkName('ghost')));
  // On the network of an app that is not (or no longer) in the rows: the next sync takes it off.
  await d.getNetwork(networkName('ghost')).connect({ Container: EDGE_CONTAINER });
  assert.ok((await nets()).includes(networkName('ghost')));
  await syncUntil('the edge off the network of no app', (n) => !n.includes(networkName('ghost')));
  await d.getNetwork(networkName('ghost')).remove();
});

test('scaling to 3 and moving tasks to another node: followed with no config load and no failed request', async (t) => {
  if (!(await ready(t))) return;
  const d = cluster!.manager.docker;
  const proxy = lab!.server.env.edge.proxy;
  // What the tests before changed (an app created, its host checked) is loaded first.
  let last = -1;
  await poll(
    'no config load for three periodic checks',
    async () => {
      const loads = proxy.state().loads;
      const quiet = loads === last;
      last = loads;
      return quiet;
    },
    60_000,
    3_000,
  );
  const loadsBefore = proxy.state().loads;
  const configBefore = await caddyConfig(lab!.adminUrl);
  const traffic = load(cluster!.manager.addr, app.host, 4);

  await updateService(d, SERVICE(), (s) => (s.Mode.Replicated.Replicas = 3));
  const seen3 = await poll(
    'three tasks answering',
    async () => {
      const s = await answering(12);
      return s.size === 3 ? s : null;
    },
    120_000,
    500,
  );
  assert.equal(seen3.size, 3);

  // Off node2: its tasks are replaced (start-first) on node1 and node3.
  const node2 = cluster!.nodes[1]!;
  await updateService(d, SERVICE(), (s) => (s.TaskTemplate.Placement.Constraints = ['node.hostname!=node2']));
  assert.ok(!(await taskNodes(d, SERVICE())).includes(node2.id), 'no task left on node2');
  assert.ok((await taskNodes(d, SERVICE())).includes(cluster!.nodes[2]!.id), 'a task on node3');
  // And a drained node: its tasks move without a word to the proxy.
  const node3 = cluster!.nodes[2]!;
  const n3 = (await d.getNode(node3.id).inspect()) as any;
  await d.getNode(node3.id).update({ ...n3.Spec, Availability: 'drain', version: n3.Version.Index });
  await poll(
    'tasks off the drained node',
    async () => {
      const nodes = await taskNodes(d, SERVICE());
      return !nodes.includes(node3.id) && (await tasksSettled(d, SERVICE(), 3));
    },
    120_000,
    250,
  );
  const n3b = (await d.getNode(node3.id).inspect()) as any;
  await d.getNode(node3.id).update({ ...n3b.Spec, Availability: 'active', version: n3b.Version.Index });
  // Requests on the moved tasks: the answers come from new task hostnames.
  const seenAfter = await poll(
    'answers from the moved tasks',
    async () => {
      const s = await answering(12);
      return [...s].some((h) => !seen3.has(h)) ? s : null;
    },
    60_000,
    500,
  );

  const answers = await traffic.stop();
  const failed = answers.filter((a) => !a.ok);
  console.error(
    `[cluster edge] scale and move: ${answers.length} requests, ${failed.length} failed` +
      (failed.length ? ` (${[...new Set(failed.map((f) => (f.ok ? '' : f.error)))].join('; ')})` : ''),
  );
  assert.equal(failed.length, 0, 'no request failed while the tasks moved');
  assert.ok(seenAfter.size >= 1);
  assert.equal(await caddyConfig(lab!.adminUrl), configBefore, "Caddy's config is unchanged");
  assert.equal(proxy.state().loads, loadsBefore, 'no config was loaded');
});

test('re-creating the edge container keeps its certificate storage, and the proxy serves again', async (t) => {
  if (!(await ready(t))) return;
  const d = cluster!.manager.docker;
  const before = d.getContainer(EDGE_CONTAINER);
  const oldId = (await before.inspect()).Id;
  const exec = async (c: any, cmd: string[]) => {
    const x = await c.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    const stream = await x.start({});
    const chunks: Buffer[] = [];
    const ended = new Promise<void>((res) => {
      stream.on('data', (b: Buffer) => chunks.push(b));
      stream.on('end', () => res());
      stream.on('close', () => res());
    });
    await bounded('the exec in the edge container', ended, 60_000).finally(() => stream.destroy());
    return Buffer.concat(chunks).toString('utf8');
  };
  await exec(before, ['sh', '-c', 'mkdir -p /data/caddy && echo kept > /data/caddy/svc-probe']);
  await before.remove({ force: true });
  const state = await lab!.server.env.edge.proxy.sync('test');
  assert.equal(state.synced, true, state.error);
  const after = d.getContainer(EDGE_CONTAINER);
  assert.notEqual((await after.inspect()).Id, oldId, 'a new container');
  assert.match(await exec(after, ['cat', '/data/caddy/svc-probe']), /kept/);
  const r = await poll(
    'an answer through the new container',
    async () => {
      const x = await get(cluster!.manager.addr, app.host);
      return x.ok ? x : null;
    },
    60_000,
    250,
  );
  assert.ok(r.ok);
});

test('a node killed with a task on it: requests go on to the remaining tasks', async (t) => {
  if (!(await ready(t))) return;
  const d = cluster!.manager.docker;
  // Two tasks, anywhere: the scheduler spreads them, so a worker runs one.
  await updateService(d, SERVICE(), (s) => {
    s.Mode.Replicated.Replicas = 2;
    s.TaskTemplate.Placement.Constraints = [];
  });
  const victimId = (await taskNodes(d, SERVICE())).find((id) => id !== cluster!.manager.id);
  const victim = cluster!.nodes.find((n) => n.id === victimId);
  assert.ok(victim, 'a task on a worker');
  await poll(
    'both tasks answering',
    async () => ((await answering(8)).size === 2 ? true : null),
    60_000,
    500,
  );

  const traffic = load(cluster!.manager.addr, app.host, 4);
  await new Promise((r) => setTimeout(r, 1000));
  const killedAt = Date.now();
  await cluster!.killNode(victim);
  // The kill blocks this process's event loop a moment (it waits for the node's processes).
  const killDone = Date.now();
  await new Promise((r) => setTimeout(r, 20_000));
  const answers = await traffic.stop();
  const afterKill = answers.filter((a) => a.at >= killedAt);
  const firstGood = answers.find((a) => a.ok && a.at >= killDone);
  const failed = afterKill.filter((a) => !a.ok);
  const slow = afterKill.filter((a) => a.ms > 500);
  const lastSlow = slow.length ? Math.max(...slow.map((a) => a.at + a.ms)) - killedAt : 0;
  console.error(
    `[cluster edge] node killed (${killDone - killedAt} ms to kill): first good answer ` +
      `${firstGood ? firstGood.at + firstGood.ms - killDone : '-'} ms after; ${afterKill.length} requests in 20 s, ${failed.length} failed, ${slow.length} slower ` +
      `than 500 ms (the last ending ${lastSlow} ms after the kill)` +
      (failed.length ? `: ${[...new Set(failed.map((f) => (f.ok ? '' : f.error)))].join('; ')}` : ''),
  );
  assert.ok(firstGood, 'an answer after the kill');
  assert.equal(failed.length, 0, 'no request failed');
});
