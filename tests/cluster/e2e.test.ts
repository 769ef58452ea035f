// Cluster mode end to end, on the path a user takes and with every part real: three engines in a
// swarm, the control plane (SVC_CLUSTER=swarm) talking to the manager, its own registry with its
// certificate authority (no SVC_REGISTRY: a build on the manager is pushed over TLS, workers pull
// with the CA file), and the proxy as a Caddy container on the manager. A Dockerfile app from git
// is deployed through the API, redeployed, fails a health check, rides out a drain and a node kill,
// and gets a Redis whose backup goes to S3. Requests go through the proxy (the manager's port 80,
// the app's Host) all along; each answer names the container it came from, which the swarm's task
// list maps to a node.
// The tests run in order and share one cluster, one control plane and one app.
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { needCluster, startTestCluster, type ClusterNode, type TestCluster } from '../_support/cluster.js';
import { needStackImages } from '../_support/stackimages.js';
import { ensureRegistryImage } from '../_support/registryimage.js';
import { needDbImages } from '../_support/dbimages.js';
import { startGitServer, type GitServer } from '../_support/gitserver.js';
import { reveal, type Client } from '../_support/server.js';
import { startS3, S3_KEY, type S3Server } from '../_support/s3.js';
import { bounded, poll } from '../_support/wait.js';
import {
  BASE,
  get,
  load,
  startEdgeLab,
  stopLoads,
  tasksSettled,
  type Answer,
  type EdgeLab,
} from '../_support/cluster-edge.js';
import { dbImageMap, runBackup } from '../engine/_data.js';
import { webDockerfile } from './_swarm.js';
import { LABEL_DATABASE, networkName, swarmServiceName } from '#lib/docker/index.js';

let cluster: TestCluster | null = null;
let lab: EdgeLab | null = null;
let git: GitServer | null = null;
let s3: S3Server | null = null;
let admin: Client;
let caDir = '';
const name = `e2e-${Math.random().toString(36).slice(2, 7)}`;
const host = `${name}.${BASE}`;
const SERVICE = swarmServiceName(name, 'app');
let appId = '';
/** The deployment that serves now (v2 after the redeploy). */
let serving = '';
/** The node the kill test killed. */
let killed: ClusterNode | null = null;

after(async () => {
  // Every step bounded: a failed test must not keep the run from ending (a request loop it left
  // running, a server stop waiting on a node that is gone).
  await stopLoads();
  await bounded('stopping the control plane', lab?.server.stop(), 60_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await bounded('stopping the git server', git?.stop(), 30_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await bounded('stopping S3', s3?.stop(), 30_000).catch((e) =>
    console.error(`[teardown] ${(e as Error).message}`),
  );
  await cluster?.close();
  // The trust file the control plane wrote on this host for its registry (the nodes share /etc).
  if (caDir) rmSync(caDir, { recursive: true, force: true });
});

async function ready(t: TestContext): Promise<boolean> {
  if (!(await needCluster(t)) || !(await needStackImages(t))) return false;
  const db = await needDbImages(t);
  if (!db) return false;
  if (lab) return true;
  const registryImage = await ensureRegistryImage();
  cluster = await startTestCluster({ size: 3 });
  // Only the manager has the registry's and Redis's images; the workers get the app's image from
  // the control plane's registry, and nothing else.
  await cluster.loadImages([registryImage, db.redis], [cluster.manager]);
  caDir = `/etc/docker/certs.d/${cluster.manager.addr}:5000`;
  lab = await startEdgeLab(cluster, {
    imageMap: { 'registry:2': registryImage, ...dbImageMap(db, ['redis']) },
  });
  lab.server.env.deployments.opts.healthTimeoutMs = 90_000;
  admin = lab.c;
  git = await startGitServer();
  return true;
}

const W = () => cluster!.manager.docker;

async function commit(msg: string, healthy = true): Promise<void> {
  // A version whose health path (/ok) is missing: its tasks never pass their health check.
  const dockerfile = healthy ? webDockerfile(msg) : webDockerfile(msg).replace('echo ok > /www/ok; ', '');
  assert.ok(healthy || !dockerfile.includes('/www/ok'));
  await git!.commit(name, { Dockerfile: dockerfile }, msg);
}

async function deploy(): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  const id = r.body.deployment.id;
  return poll(
    `deployment ${id}`,
    async () => {
      const d = (await admin.req('GET', `/api/apps/${appId}/deployments/${id}`)).body.deployment;
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) ? d : null;
    },
    400_000,
    500,
  );
}

async function logOf(id: string): Promise<string> {
  const r = await admin.req('GET', `/api/apps/${appId}/deployments/${id}/logs`);
  return (r.body?.items ?? []).map((l: any) => l.line).join('\n');
}

/** Container hostname (what an answer names) -> node hostname, from the swarm's task list. */
async function taskHosts(): Promise<Map<string, string>> {
  const nodes = new Map(cluster!.nodes.map((n) => [n.id, n.name]));
  const tasks = (await W().listTasks({ filters: { service: [SERVICE] } })) as any[];
  const out = new Map<string, string>();
  for (const t of tasks) {
    const id: string | undefined = t.Status?.ContainerStatus?.ContainerID;
    if (id) out.set(id.slice(0, 12), nodes.get(t.NodeID) ?? t.NodeID);
  }
  return out;
}

/**
 * The nodes of the tasks answering `version` through the proxy: polled until `count` distinct
 * tasks did.
 */
async function answeringNodes(version: string, count: number): Promise<string[]> {
  const seen = new Map<string, string>();
  const r = await poll(
    `${count} tasks answering ${version} through the proxy`,
    async () => {
      const hosts = await taskHosts();
      for (let i = 0; i < 8; i++) {
        const r = await get(cluster!.manager.addr, host);
        const [v, h] = r.ok ? r.body.split(' ') : [];
        if (v === version && h && hosts.has(h)) seen.set(h, hosts.get(h)!);
      }
      return seen.size >= count ? [...seen.values()] : null;
    },
    120_000,
    500,
  ).catch((e) => {
    throw new Error(`${e.message}: seen ${JSON.stringify([...seen])}`);
  });
  return r;
}

/** Node hostnames of the app's running tasks, as the API's service listing shows them. */
async function apiTaskNodes(): Promise<string[]> {
  const r = await admin.req('GET', `/api/apps/${appId}/services`);
  assert.equal(r.status, 200, r.text);
  const svc = r.body.items.find((s: any) => s.name === 'app');
  return (svc?.tasks ?? []).filter((x: any) => x.state === 'running').map((x: any) => x.node as string);
}

/** The app's tasks as `docker service ps --no-trunc` shows them: node, state and error. */
async function taskReport(): Promise<string> {
  const nodes = new Map(cluster!.nodes.map((n) => [n.id, n.name]));
  const tasks = (await W().listTasks({ filters: { service: [SERVICE] } })) as any[];
  return tasks
    .map(
      (x) =>
        `${nodes.get(x.NodeID) ?? x.NodeID ?? '-'} ${x.DesiredState}/${x.Status?.State}` +
        `${x.Status?.Err ? ` (${x.Status.Err})` : ''}`,
    )
    .join('; ');
}

/** PATCH of the app's service settings (replicas and placement apply to the running service at once). */
async function patchService(body: object): Promise<void> {
  const r = await admin.req('PATCH', `/api/apps/${appId}/services/app`, body);
  assert.equal(r.status, 200, r.text);
}

/** Polls `check` for the app's tasks; on a timeout the error lists every task with its error. */
async function pollTasks<T>(
  what: string,
  check: () => Promise<T>,
  timeoutMs = 120_000,
): Promise<NonNullable<T>> {
  return poll(what, check, timeoutMs, 500).catch(async (e) => {
    throw new Error(`${(e as Error).message}; tasks: ${await taskReport().catch(() => '?')}`);
  });
}

function failures(answers: Answer[]): string {
  const failed = answers.filter((a) => !a.ok);
  const errors = [...new Set(failed.map((f) => (f.ok ? '' : f.error)))];
  return `${answers.length} requests, ${failed.length} failed${errors.length ? ` (${errors.join('; ')})` : ''}`;
}

test('a Dockerfile app deployed through the API runs 2 replicas on two workers, both answering through the proxy', async (t) => {
  if (!(await ready(t))) return;
  await commit('v1');
  const r = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(name), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  appId = r.body.app.id;
  const p = await admin.req('PATCH', `/api/apps/${appId}/services/app`, {
    port: 8080,
    health_path: '/ok',
    replicas: 2,
    placement: { constraints: ['node.role==worker'] },
  });
  assert.equal(p.status, 200, p.text);
  const d = await deploy();
  assert.equal(d.status, 'succeeded', `${d.error}\n${await logOf(d.id)}`);
  serving = d.id;
  // Built on the manager, pushed to the control plane's own registry (TLS), pulled by digest.
  const registry = (await admin.req('GET', '/api/instance/info')).body.cluster.registry;
  assert.equal(registry, `${cluster!.manager.addr}:5000`);
  assert.match(d.images.app, new RegExp(`^${registry.replace(/\./g, '\\.')}/.+@sha256:[0-9a-f]{64}$`));
  const nodes = await answeringNodes('v1', 2);
  assert.deepEqual(nodes.sort(), ['node2', 'node3']);
  assert.deepEqual((await apiTaskNodes()).sort(), ['node2', 'node3']);
});

test('a redeploy with new content under a request loop through the proxy: no failed request, the answers switch', async (t) => {
  if (!(await ready(t)) || !serving) return;
  await commit('v2');
  const traffic = load(cluster!.manager.addr, host, 4);
  t.after(() => traffic.stop());
  const d = await deploy();
  assert.equal(d.status, 'succeeded', `${d.error}\n${await logOf(d.id)}`);
  // Answers for a while after the deployment ended: the old tasks have stopped by then.
  console.error(
    `[cluster e2e] v2 answering from ${await answeringNodes('v2', 2)}; tasks on ${await apiTaskNodes()}`,
  );
  await new Promise((r) => setTimeout(r, 2000));
  const answers = await traffic.stop();
  console.error(`[cluster e2e] redeploy: ${failures(answers)}`);
  serving = d.id;
  assert.equal(answers.filter((a) => !a.ok).length, 0, failures(answers));
  const bodies = answers.map((a) => (a.ok ? a.body.split(' ')[0] : ''));
  assert.equal(bodies[0], 'v1');
  assert.equal(bodies.at(-1), 'v2');
  // Once the first v2 answer came, v1 may answer only while the old tasks drain.
  assert.ok(
    bodies.slice(-20).every((b) => b === 'v2'),
    bodies.slice(-20).join(','),
  );
});

test('a version failing its health check is rolled back; the proxy answers the previous version throughout', async (t) => {
  if (!(await ready(t)) || !serving) return;
  await commit('v3', false);
  const traffic = load(cluster!.manager.addr, host, 4);
  t.after(() => traffic.stop());
  const d = await deploy();
  const answers = await traffic.stop();
  console.error(`[cluster e2e] failing health check: ${failures(answers)}; ${d.error}`);
  assert.equal(d.status, 'failed', await logOf(d.id));
  assert.match(d.error ?? '', /rolled back/, d.error);
  assert.equal(answers.filter((a) => !a.ok).length, 0, failures(answers));
  const versions = new Set(answers.map((a) => (a.ok ? a.body.split(' ')[0] : '')));
  assert.deepEqual([...versions], ['v2'], 'only the previous version answered');
  const spec = (await W().getService(SERVICE).inspect()) as any;
  const current = (await admin.req('GET', `/api/apps/${appId}/deployments/${serving}`)).body.deployment;
  assert.equal(spec.Spec.TaskTemplate.ContainerSpec.Image, current.images.app, 'the v2 image runs');
});

test('replicas and placement changed through the API: a task on a worker that lacks the image pulls it with the registry account', async (t) => {
  if (!(await ready(t)) || !serving) return;
  const image: string = (await admin.req('GET', `/api/apps/${appId}/deployments/${serving}`)).body.deployment
    .images.app;
  const node3 = cluster!.nodes.find((n) => n.name === 'node3')!;
  // Both tasks on node2 ...
  await patchService({ placement: { constraints: ['node.hostname==node2'] } });
  await pollTasks('both tasks on node2', async () => {
    const n = await apiTaskNodes();
    return (await tasksSettled(W(), SERVICE, 2)) && n.length === 2 && n.every((x) => x === 'node2');
  });
  // ... and node3 as a node that never ran this version (one joined since the deploy): its copy goes.
  await node3.docker.getImage(image).remove({ force: true });
  await assert.rejects(node3.docker.getImage(image).inspect(), /no such image/i);
  // Scaled to 1 on any worker and back to 2: the second task goes to the emptier node3, whose
  // engine pulls the image from the control plane's registry with the account the deploy gave the
  // swarm. A change that sent other credentials (or empty ones) leaves that pull refused.
  await patchService({ placement: { constraints: ['node.role==worker'] }, replicas: 1 });
  await pollTasks('1 task', () => tasksSettled(W(), SERVICE, 1));
  await patchService({ replicas: 2 });
  const nodes = await pollTasks('a task on node2 and one on node3', async () => {
    const n = (await apiTaskNodes()).sort();
    return (await tasksSettled(W(), SERVICE, 2)) && n.join() === 'node2,node3' ? n : null;
  });
  assert.deepEqual(nodes, ['node2', 'node3']);
  const pulled = (await node3.docker.getImage(image).inspect()) as { RepoDigests?: string[] };
  assert.ok(pulled.RepoDigests?.includes(image), `node3 pulled ${image}`);
  assert.deepEqual((await answeringNodes('v2', 2)).sort(), ['node2', 'node3']);
});

test('draining the node of a task through the API moves it with no failed request', async (t) => {
  if (!(await ready(t)) || !serving) return;
  let nodes = await apiTaskNodes();
  // A drain stops a node's tasks before their replacements run: the claim is that the task on the
  // other node serves meanwhile. A start-first redeploy may have left both tasks on one worker; a
  // scale to 1 and back (applied at once through the API) puts the second on the emptier node.
  if (new Set(nodes).size < 2) {
    const scale = async (replicas: number) => {
      const r = await admin.req('PATCH', `/api/apps/${appId}/services/app`, { replicas });
      assert.equal(r.status, 200, r.text);
      await poll(`${replicas} task(s)`, () => tasksSettled(W(), SERVICE, replicas), 120_000, 500);
    };
    await scale(1);
    await scale(2);
    nodes = await poll(
      'the tasks on two nodes',
      async () => {
        const n = await apiTaskNodes();
        return n.length === 2 && new Set(n).size === 2 ? n : null;
      },
      60_000,
      500,
    );
    await answeringNodes('v2', 2);
  }
  const one = nodes.find((n) => nodes.filter((x) => x === n).length === 1) ?? nodes[0];
  const victim = cluster!.nodes.find((n) => n.name === one)!;
  assert.ok(victim && victim !== cluster!.manager, nodes.join(','));
  const traffic = load(cluster!.manager.addr, host, 4);
  t.after(() => traffic.stop());
  let answers: Answer[] = [];
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const r = await admin.req('PATCH', `/api/nodes/${victim.id}`, { availability: 'drain' });
    assert.equal(r.status, 200, r.text);
    await poll(
      'the tasks off the drained node',
      async () => !(await apiTaskNodes()).includes(victim.name) && (await tasksSettled(W(), SERVICE, 2)),
      120_000,
      500,
    );
    await answeringNodes('v2', 1);
    await new Promise((r) => setTimeout(r, 2000));
  } finally {
    answers = await traffic.stop();
    const back = await admin.req('PATCH', `/api/nodes/${victim.id}`, { availability: 'active' });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.body.node.availability, 'active');
  }
  console.error(`[cluster e2e] drain ${victim.name} (tasks were on ${nodes}): ${failures(answers)}`);
  assert.equal(answers.filter((a) => !a.ok).length, 0, failures(answers));
  assert.ok(!(await apiTaskNodes()).includes(victim.name));
});

test('a killed node with tasks on it: the app answers again through the proxy, its tasks rescheduled elsewhere', async (t) => {
  if (!(await ready(t)) || !serving) return;
  const victimName = (await apiTaskNodes())[0];
  const victim = cluster!.nodes.find((n) => n.name === victimName)!;
  assert.ok(victim && victim !== cluster!.manager);
  const traffic = load(cluster!.manager.addr, host, 4);
  t.after(() => traffic.stop());
  await new Promise((r) => setTimeout(r, 1000));
  const killedAt = Date.now();
  await cluster!.killNode(victim);
  killed = victim;
  const killDone = Date.now();
  const first = await poll(
    'an answer after the kill',
    () => traffic.answers.find((a) => a.ok && a.at >= killDone),
    180_000,
    100,
  );
  let listed: unknown = null;
  const moved = await poll(
    'the tasks running on other nodes',
    async () => {
      listed = (await admin.req('GET', `/api/apps/${appId}/services`)).body.items[0]?.tasks;
      const n = await apiTaskNodes();
      return n.length === 2 && !n.includes(victim.name) ? n : null;
    },
    180_000,
    500,
  ).catch((e) => {
    throw new Error(`${e.message}; the listing: ${JSON.stringify(listed)}`);
  });
  const onNew = await answeringNodes('v2', 1);
  const answers = (await traffic.stop()).filter((a) => a.at >= killedAt);
  const recovered = first.at + first.ms - killDone;
  console.error(
    `[cluster e2e] ${victim.name} killed (kill took ${killDone - killedAt} ms): answering again ` +
      `${recovered} ms after it; tasks now on ${moved.join(', ')}; ${failures(answers)}`,
  );
  assert.ok(first.ok);
  assert.ok(![...onNew].includes(victim.name));
  assert.ok(moved.every((n) => n !== victim.name));
});

test('a Redis on the manager: reached by name from a task on another node, backed up to S3', async (t) => {
  if (!(await ready(t)) || !serving) return;
  const r = await admin.req('POST', `/api/apps/${appId}/databases`, { engine: 'redis', version: '7.2' });
  assert.equal(r.status, 202, r.text);
  const dbId = r.body.database.id;
  await poll(
    'redis ready',
    async () => {
      const x = (await admin.req('GET', `/api/apps/${appId}/databases`)).body.items.find(
        (i: any) => i.id === dbId,
      );
      if (x?.status === 'error') throw new Error(x.error);
      return x?.status === 'ready' ? x : null;
    },
    300_000,
    1000,
  );
  // The database is a container of the manager's engine, on the app's overlay network.
  const [container] = (await W().listContainers({
    filters: { label: [`${LABEL_DATABASE}=${dbId}`] },
  })) as any[];
  assert.ok(container, 'the database container on the manager');
  assert.ok(Object.keys(container.NetworkSettings.Networks).includes(networkName(name)));
  for (const worker of cluster!.nodes.filter((n) => n !== cluster!.manager && n !== killed)) {
    const there = await worker.docker.listContainers({ filters: { label: [`${LABEL_DATABASE}=${dbId}`] } });
    assert.equal(there.length, 0, `no database container on ${worker.name}`);
  }

  const url = new URL((await reveal(admin, appId, 'REDIS_URL')).body.value as string);
  // From a running task on a worker, by the database's name over the overlay.
  const tasks = (await W().listTasks({
    filters: { service: [SERVICE], 'desired-state': ['running'] },
  })) as any[];
  const task = tasks.find((x) => x.Status.State === 'running' && x.NodeID !== cluster!.manager.id);
  assert.ok(task, 'a task on a worker');
  const node = cluster!.nodes.find((n) => n.id === task.NodeID) as ClusterNode;
  const marker = `e2e-${Date.now()}`;
  const out = await execIn(node, task.Status.ContainerStatus.ContainerID, [
    'sh',
    '-c',
    'printf "AUTH %s\\r\\nSET e2e %s\\r\\nGET e2e\\r\\n" "$1" "$2" | nc -w 3 "$3" "$4"',
    'sh',
    decodeURIComponent(url.password),
    marker,
    url.hostname,
    url.port,
  ]);
  console.error(`[cluster e2e] redis from a task on ${node.name}: ${JSON.stringify(out)}`);
  assert.match(out, new RegExp(`\\+OK\\r?\\n\\+OK\\r?\\n\\$\\d+\\r?\\n${marker}`), out);

  s3 = await startS3();
  const cfg = await admin.req('POST', `/api/apps/${appId}/backups`, {
    source: { type: 'database', database_id: dbId },
    schedule: '0 3 * * *',
    keep_last: 2,
    verify_after_run: true,
    destination: {
      type: 's3',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: s3.bucket,
      prefix: 'e2e',
      access_key_id: S3_KEY.id,
      secret_access_key: 'e2e-secret',
      path_style: true,
    },
  });
  assert.equal(cfg.status, 201, cfg.text);
  const run = await runBackup(admin, appId, cfg.body.backup.id);
  assert.equal(run.status, 'succeeded', run.error);
  assert.ok(run.size_bytes > 0);
  const verified = await poll(
    'the run verified',
    async () => {
      const x = (await admin.req('GET', `/api/apps/${appId}/backups/runs/${run.id}`)).body.run;
      return x.verified_at || x.verify_error ? x : null;
    },
    180_000,
    500,
  );
  assert.equal(verified.verify_error, null);
  assert.ok(
    s3.log.some((l) => l.includes(`${run.id}.svcbak`)),
    'the artifact went to S3',
  );
  // The dump holds what the task on the worker wrote: it came from the manager's Redis.
  const dl = await fetch(`${lab!.server.url}/api/apps/${appId}/backups/runs/${run.id}/download`, {
    headers: { cookie: admin.cookieHeader() },
  });
  assert.equal(dl.status, 200);
  const dump = gunzipSync(Buffer.from(await dl.arrayBuffer()));
  assert.match(dump.subarray(0, 5).toString('latin1'), /^REDIS/);
  assert.ok(dump.includes(marker), 'the marker is in the dump');
});

async function execIn(node: ClusterNode, id: string, cmd: string[]): Promise<string> {
  const x = await node.docker.getContainer(id).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await x.start({});
  const chunks: Buffer[] = [];
  const ended = new Promise<void>((res) => {
    stream.on('data', (b: Buffer) => chunks.push(b));
    stream.on('end', () => res());
    stream.on('close', () => res());
  });
  // nc gives up after 3 s; a minute means the exec itself is stuck.
  await bounded('the exec in the task', ended, 60_000).finally(() => stream.destroy());
  // Strip the engine's 8-byte frame headers.
  const buf = Buffer.concat(chunks);
  let out = '';
  for (let i = 0; i + 8 <= buf.length;) {
    const len = buf.readUInt32BE(i + 4);
    out += buf.subarray(i + 8, i + 8 + len).toString('utf8');
    i += 8 + len;
  }
  return out;
}
