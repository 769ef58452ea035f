// npm run bench:deploy  [-- --only-redeploy]
// 1. The product's own overhead of redeploying an image app with a health path, through Caddy
//    (bench/redeploy.ts): the API call to the new version answering through the proxy, minus the
//    container's start and the health probe's first success; goal < 500 ms.
// 2. For the same small repository, in one run:
//    plain:  `docker build` + `docker run` straight against the engine, until the app answers;
//    API:    POST /api/apps/{id}/deployments -> succeeded (clone, build, blue/green, health gate).
// 3. The latency from a build log line being produced (DeployLog.write, the path every builder
//    line takes) to 50 WebSocket subscribers of build:<id> receiving it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, rm, writeFile, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type WebSocket from 'ws';
import { startTestServer, adminClient, apiToken } from '../tests/_support/server.js';
import { ensureBaseImage } from '../tests/_support/docker.js';
import { startGitServer, webRepo, cleanupApp } from '../tests/engine/_deploy.js';
import { insertFinishedDeployment, openSocket, wsUrl } from '../tests/_support/ws.js';
import { DeployLog } from '#lib/deploy/log.js';
import { newId } from '#lib/crypto/random.js';
import { buildRedeployImage, redeployOverhead } from './redeploy.js';

const run = promisify(execFile);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SUBSCRIBERS = 50;
const LINES = 300;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const median = (xs: number[]) => pct(xs, 50);

async function answers(ip: string): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(2000) });
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > end) throw new Error('plain container never answered');
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function plainRun(dir: string, tag: string, net: string): Promise<number> {
  const t0 = performance.now();
  await run('docker', ['build', '-q', '-t', tag, dir], { maxBuffer: 1 << 24 });
  const { stdout } = await run('docker', ['run', '-d', '--network', net, '--label', 'svc.bench=1', tag]);
  const id = stdout.trim();
  const { stdout: ip } = await run('docker', [
    'inspect',
    '-f',
    `{{(index .NetworkSettings.Networks "${net}").IPAddress}}`,
    id,
  ]);
  await answers(ip.trim());
  const ms = performance.now() - t0;
  await run('docker', ['rm', '-f', id]);
  await run('docker', ['rmi', '-f', tag]).catch(() => {});
  return ms;
}

async function main(): Promise<void> {
  await ensureBaseImage();
  const image = `svc-bench/redeploy:${process.pid}`;
  await buildRedeployImage(image);
  try {
    await redeployOverhead(image, Number(process.env.BENCH_REDEPLOY_ROUNDS ?? 7));
  } finally {
    await run('docker', ['image', 'rm', '-f', image]).catch(() => {});
  }
  if (process.argv.includes('--only-redeploy')) return;
  const git = await startGitServer();
  const s = await startTestServer();
  const admin = await adminClient(s);
  const name = `bench-${randomBytes(3).toString('hex')}`;
  const net = `svc-benchplain-${randomBytes(3).toString('hex')}`;
  const local = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  await run('docker', ['network', 'create', net]);
  try {
    const repo = 'bench-app';
    const files = (nonce: string) => webRepo(`bench ${nonce}`, `RUN echo ${nonce} > /nonce`);
    await git.commit(repo, files('init'));
    const app = (
      await admin.req('POST', '/api/apps', {
        name,
        source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
      })
    ).body.app;
    await admin.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' });
    const plain: number[] = [];
    const api: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Each path builds content the engine has never seen: no cache advantage either way.
      const a = randomBytes(6).toString('hex');
      const b = randomBytes(6).toString('hex');
      await git.commit(repo, files(a));
      const t0 = performance.now();
      const d = (await admin.req('POST', `/api/apps/${app.id}/deployments`, {})).body.deployment;
      for (;;) {
        const st = (await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}`)).body.deployment.status;
        if (st === 'succeeded') break;
        if (['failed', 'canceled', 'interrupted'].includes(st)) throw new Error(`bench deployment ${st}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      api.push(performance.now() - t0);
      await rm(local, { recursive: true, force: true });
      await cp(join(git.base, repo), local, { recursive: true, filter: (src) => !src.includes('/.git') });
      for (const [p, c] of Object.entries(files(b))) await writeFile(join(local, p), c);
      plain.push(await plainRun(local, `svc-bench/plain:${b}`, net));
    }
    const p = median(plain);
    const q = median(api);
    const overhead = q - p;
    const goal = Math.max(0.1 * p, 1000);
    console.log(
      `deploy benchmark (${ROUNDS} rounds, medians; first API round ${ROUNDS > 1 ? 'is a fresh clone, later ones fetch' : 'is a fresh clone'})`,
    );
    console.log(
      `  plain docker build + run until it answers: ${p.toFixed(0)} ms   (rounds: ${plain.map((x) => x.toFixed(0)).join(', ')})`,
    );
    console.log(
      `  API deployment, POST to succeeded:        ${q.toFixed(0)} ms   (rounds: ${api.map((x) => x.toFixed(0)).join(', ')})`,
    );
    console.log(
      `  control-plane overhead: ${overhead.toFixed(0)} ms (${((overhead / p) * 100).toFixed(1)}%); goal < ${goal.toFixed(0)} ms: ${overhead < goal ? 'met' : 'NOT met'}`,
    );

    // Log line -> WebSocket latency, 50 subscribers of one build topic.
    const token = await apiToken(admin, 'bench');
    const depId = newId();
    // The row must exist (for the foreign key, and a build: topic of no deployment is refused);
    // the log writes as a real deployment's would.
    await insertFinishedDeployment(s.env.db, app.id, depId);
    const clients: WebSocket[] = [];
    const latencies: number[] = [];
    const sent = new Map<number, number>();
    let received = 0;
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${token}` });
      ws.on('message', (m) => {
        const msg = JSON.parse(m.toString());
        if (msg.type === 'subscribed') received--;
        if (msg.type !== 'event') return;
        const at = sent.get(msg.data.seq);
        if (at !== undefined) latencies.push(performance.now() - at);
        received++;
      });
      ws.send(JSON.stringify({ type: 'subscribe', topic: `build:${depId}` }));
      clients.push(ws);
    }
    while (received > -SUBSCRIBERS) await new Promise((r) => setTimeout(r, 10));
    received = 0;
    const log = new DeployLog(s.env.db, s.env.bus, depId);
    for (let i = 1; i <= LINES; i++) {
      sent.set(i, performance.now());
      log.write(`Step ${i}: a build output line of ordinary length, like the engine sends`, 'build');
      await new Promise((r) => setTimeout(r, 5));
    }
    const end = Date.now() + 30_000;
    while (received < LINES * SUBSCRIBERS && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    for (const ws of clients) ws.close();
    console.log(
      `log line -> WebSocket, ${SUBSCRIBERS} subscribers, ${LINES} lines (${latencies.length} deliveries): p50 ${pct(latencies, 50).toFixed(2)} ms, p99 ${pct(latencies, 99).toFixed(2)} ms, max ${Math.max(...latencies).toFixed(2)} ms; goal p99 < 50 ms: ${pct(latencies, 99) < 50 ? 'met' : 'NOT met'}`,
    );
  } finally {
    await cleanupApp(s.env.engine, name);
    await run('docker', ['network', 'rm', net]).catch(() => {});
    await rm(local, { recursive: true, force: true });
    await s.stop();
    await git.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
