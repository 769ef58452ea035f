// npm run bench:cluster  [-- --updates 5 --clients 4 --replicas 2]
//
// Cluster mode under load, on the path a user takes. A real three-node swarm
// (tests/_support/cluster.ts), a control plane with SVC_CLUSTER=swarm running Caddy as a container
// on the manager and its own registry (TLS, with its CA), and an image app that only the manager's
// engine has (a busybox web server answering `$MSG <task hostname>`, health path /ok), deployed
// through the API as `--replicas` tasks: each deploy pushes it to the registry and the nodes pull it.
// `--clients` loops each send GETs through the proxy (the manager's port 80, a new connection
// each) while:
// 1. the app is redeployed `--updates` times through the API (a changed environment variable, then
//    POST /api/apps/{id}/deployments, waiting for `succeeded`: every task is replaced, one at a
//    time, the new one started and healthy before the old one stops);
// 2. a node that runs a task (not the manager) is killed.
// Prints the requests and failures (requests lost) of each phase, and for the kill: the time from
// the kill to the first good answer, the slow answers (dials to the dead node's address time out
// and are retried on another task), and the time until a replacement task on another node answers.
import { rmSync } from 'node:fs';
import { startTestCluster } from '../tests/_support/cluster.js';
import { ensureStackImages } from '../tests/_support/stackimages.js';
import { ensureRegistryImage } from '../tests/_support/registryimage.js';
import { poll } from '../tests/_support/wait.js';
import type { Client } from '../tests/_support/server.js';
import { BASE, get, load, startEdgeLab, taskNodes, type Answer } from '../tests/_support/cluster-edge.js';
import { buildWebImage } from '../tests/cluster/_swarm.js';
import { swarmServiceName } from '#lib/docker/index.js';
import { arg } from './_args.js';

const updates = arg('--updates', 5);
const clients = arg('--clients', 4);
const replicas = arg('--replicas', 2);

function tally(answers: Array<Answer & { at: number }>): string {
  const failed = answers.filter((a) => !a.ok);
  const errors = [...new Set(failed.map((f) => (f.ok ? '' : f.error)))];
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const p = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0;
  return (
    `${answers.length} requests, ${failed.length} failed${errors.length ? ` (${errors.join('; ')})` : ''}; ` +
    `latency p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${ms.at(-1) ?? 0} ms`
  );
}

const WEB = 'svc-test/swarm-web:1';

/** PUTs MSG, POSTs a deployment and waits for it to end; throws unless it succeeded. */
async function deploy(c: Client, appId: string, msg: string): Promise<void> {
  const put = await c.req('PUT', `/api/apps/${appId}/env`, { items: [{ key: 'MSG', value: msg }] });
  if (put.status >= 300) throw new Error(`setting MSG: ${put.status} ${put.text}`);
  const r = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  if (r.status !== 202) throw new Error(`deploying: ${r.status} ${r.text}`);
  const id = r.body.deployment.id;
  const d = await poll(
    `deployment ${id}`,
    async () => {
      const x = (await c.req('GET', `/api/apps/${appId}/deployments/${id}`)).body.deployment;
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(x.status) ? x : null;
    },
    400_000,
    250,
  );
  if (d.status !== 'succeeded') throw new Error(`deployment ${id} ${d.status}: ${d.error}`);
}

async function main(): Promise<void> {
  await ensureStackImages();
  const registryImage = await ensureRegistryImage();
  await buildWebImage(WEB);
  const cluster = await startTestCluster({ size: 3 });
  // The trust file the control plane writes on this host for its registry (the nodes share /etc).
  const caDir = `/etc/docker/certs.d/${cluster.manager.addr}:5000`;
  let stop: (() => Promise<void>) | null = null;
  try {
    await cluster.loadImages([registryImage, WEB], [cluster.manager]);
    const lab = await startEdgeLab(cluster, { imageMap: { 'registry:2': registryImage } });
    lab.server.env.deployments.opts.healthTimeoutMs = 120_000;
    stop = () => lab.server.stop();
    const d = cluster.manager.docker;
    const c = lab.c;
    const created = await c.req('POST', '/api/apps', {
      name: 'bench',
      source: { type: 'image', image: WEB },
    });
    if (created.status !== 201) throw new Error(`creating the app: ${created.status} ${created.text}`);
    const app = { id: created.body.app.id as string, host: `bench.${BASE}` };
    const name = swarmServiceName('bench', 'app');
    const p = await c.req('PATCH', `/api/apps/${app.id}/services/app`, {
      port: 8080,
      health_path: '/ok',
      replicas,
    });
    if (p.status !== 200) throw new Error(`the service settings: ${p.status} ${p.text}`);
    const t1 = Date.now();
    await deploy(c, app.id, 'r0');
    console.log(`first deploy (push to the registry, pulls on the nodes) in ${Date.now() - t1} ms`);
    await poll(
      'an answer through the proxy',
      async () => (await get(cluster.manager.addr, app.host)).ok,
      120_000,
      250,
    );
    const loadsBefore = lab.server.env.edge.proxy.state().loads;

    const traffic = load(cluster.manager.addr, app.host, clients);
    const t0 = Date.now();
    for (let i = 1; i <= updates; i++) await deploy(c, app.id, `r${i}`);
    const during = await traffic.stop();
    const last = during.filter((a) => a.ok).at(-1);
    console.log(
      `${updates} redeploys through the API of ${replicas} tasks (start-first, health-checked) in ${Date.now() - t0} ms: ` +
        `${tally(during)}; last answer ${last?.ok ? JSON.stringify(last.body) : '-'}; ` +
        `config loads: ${lab.server.env.edge.proxy.state().loads - loadsBefore}`,
    );

    const victimId = (await taskNodes(d, name)).find((id) => id !== cluster.manager.id);
    const victim = cluster.nodes.find((n) => n.id === victimId);
    if (!victim) {
      console.log('no task runs on a worker: the kill phase is skipped');
      return;
    }
    const before = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const r = await get(cluster.manager.addr, app.host);
      if (r.ok) before.add(r.body);
    }
    const traffic2 = load(cluster.manager.addr, app.host, clients);
    await new Promise((r) => setTimeout(r, 1000));
    const killedAt = Date.now();
    await cluster.killNode(victim);
    const killDone = Date.now();
    const replacement = await poll(
      'an answer from a replacement task',
      () => traffic2.answers.find((a) => a.ok && a.at >= killDone && !before.has(a.body)),
      180_000,
      100,
    ).catch(() => null);
    await new Promise((r) => setTimeout(r, 5000));
    const after = (await traffic2.stop()).filter((a) => a.at >= killedAt);
    const first = after.find((a) => a.ok && a.at >= killDone);
    const slow = after.filter((a) => a.ms > 500);
    const lastSlow = slow.length ? Math.max(...slow.map((a) => a.at + a.ms)) - killDone : 0;
    console.log(
      `${victim.name} killed with a task on it (the kill took ${killDone - killedAt} ms): ` +
        `${after.filter((a) => !a.ok).length} requests lost; answering again (first good answer) ` +
        `${first ? first.at + first.ms - killDone : '-'} ms after it; ${slow.length} answers slower than 500 ms, ` +
        `the last ending ${lastSlow} ms after it; a replacement task answered ` +
        `${replacement ? `${replacement.at + replacement.ms - killDone} ms` : 'never (within 180 s)'} after it; ` +
        `${tally(after)}`,
    );
  } finally {
    await stop?.();
    await cluster.close();
    rmSync(caDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
