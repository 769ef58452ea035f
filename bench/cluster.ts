// npm run bench:cluster  [-- --updates 5 --clients 4 --replicas 2]
//
// The proxy in cluster mode under load. A real three-node swarm (tests/_support/cluster.ts), a
// control plane with SVC_CLUSTER=swarm running Caddy as a container on the manager, and an app
// whose Swarm service (dnsrr, health check, start-first updates) serves its task hostname.
// `--clients` loops each send GETs through the proxy (the manager's port 80, a new connection
// each) while:
// 1. the service is updated `--updates` times (a changed environment variable: every task is
//    replaced, one at a time, the new one started and healthy before the old one stops);
// 2. a node that runs a task (not the manager) is killed.
// Prints the requests and failures of each phase, and for the kill: the time from the kill to the
// first good answer, the slow answers (dials to the dead node's address time out and are retried
// on another task), and the time until a replacement task on another node answers.
import { startTestCluster } from '../tests/_support/cluster.js';
import { ensureStackImages } from '../tests/_support/stackimages.js';
import { poll } from '../tests/_support/wait.js';
import {
  createApp,
  createService,
  get,
  load,
  startEdgeLab,
  taskNodes,
  tasksSettled,
  updateService,
  type Answer,
} from '../tests/_support/cluster-edge.js';
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

async function main(): Promise<void> {
  await ensureStackImages();
  const cluster = await startTestCluster({ size: 3 });
  let stop: (() => Promise<void>) | null = null;
  try {
    const lab = await startEdgeLab(cluster);
    stop = () => lab.server.stop();
    const d = cluster.manager.docker;
    const app = await createApp(lab, 'bench');
    const name = swarmServiceName(app.name, 'app');
    await createService(lab, d, app, { replicas, constraints: [], healthCheck: true });
    await poll('the service settled', () => tasksSettled(d, name, replicas), 180_000, 250);
    await poll(
      'an answer through the proxy',
      async () => (await get(cluster.manager.addr, app.host)).ok,
      120_000,
      250,
    );
    const loadsBefore = lab.server.env.edge.proxy.state().loads;

    const traffic = load(cluster.manager.addr, app.host, clients);
    const t0 = Date.now();
    for (let i = 1; i <= updates; i++)
      await updateService(d, name, (s) => {
        s.TaskTemplate.ContainerSpec.Env = [`REVISION=${i}`];
      });
    const during = await traffic.stop();
    console.log(
      `${updates} rolling updates of ${replicas} tasks (start-first, health-checked) in ${Date.now() - t0} ms: ` +
        `${tally(during)}; config loads: ${lab.server.env.edge.proxy.state().loads - loadsBefore}`,
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
      `${victim.name} killed with a task on it (the kill took ${killDone - killedAt} ms): first good answer ` +
        `${first ? first.at + first.ms - killDone : '-'} ms after it; ${slow.length} answers slower than 500 ms, ` +
        `the last ending ${lastSlow} ms after it; a replacement task answered ` +
        `${replacement ? `${replacement.at + replacement.ms - killDone} ms` : 'never (within 180 s)'} after it; ` +
        `${tally(after)}`,
    );
  } finally {
    await stop?.();
    await cluster.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
