// npm run bench:edge  [-- --requests 2000 --concurrency 8 --redeploys 5]
//
// Real components: Caddy (its own process, admin API only), Pebble issuing the certificate,
// challtestsrv as DNS, the control plane with its API, an image app deployed on dockerd.
// 1. Overhead: the same client (Node, keep-alive agents, `--concurrency` requests in flight) runs
//    `--requests` GETs directly to the container (http://<container ip>:8080) and through Caddy
//    (https://<domain>, TLS with the Pebble certificate), alternating, two rounds each; prints
//    requests/s and mean latency of each and the ratio.
// 2. Zero downtime: 4 clients (2 opening a connection per request, 2 on kept-alive connections)
//    loop through Caddy while the app is redeployed `--redeploys` times; prints the requests lost.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Agent as HttpsAgent } from 'node:https';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { startEdgeLab, type EdgeLab } from '../tests/_support/edge.js';
import { ensureBaseImage, BASE_IMAGE } from '../tests/_support/docker.js';
import { startTestServer, adminClient, type TestServer, type Client } from '../tests/_support/server.js';
import { waitStatus, cleanupApp } from '../tests/engine/_deploy.js';
import { poll } from '../tests/_support/wait.js';
import { listAppContainers } from '#lib/docker/index.js';
import { containerAddress } from '#lib/proxy/deploy.js';
import { arg } from './_args.js';

const run = promisify(execFile);
const IMAGE = `svc-bench/edge-web:${process.pid}`;
const HOST = 'bench.edge.test';

async function deploy(c: Client, appId: string): Promise<void> {
  const d = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  if (d.status !== 202) throw new Error(`deploy: ${d.status} ${d.text}`);
  await waitStatus(c, appId, d.body.deployment.id, ['succeeded']);
}

function direct(agent: HttpAgent, ip: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: ip, port: 8080, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `total` requests with `concurrency` in flight; requests/s and mean latency. */
async function load(
  total: number,
  concurrency: number,
  one: () => Promise<number>,
): Promise<{ rps: number; meanMs: number; errors: number }> {
  let next = 0;
  let errors = 0;
  let sum = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const s = performance.now();
        try {
          if ((await one()) !== 200) errors++;
        } catch {
          errors++;
        }
        sum += performance.now() - s;
      }
    }),
  );
  const ms = performance.now() - t0;
  return { rps: total / (ms / 1000), meanMs: sum / total, errors };
}

async function main(): Promise<void> {
  const total = arg('--requests', 2000);
  const concurrency = arg('--concurrency', 8);
  const redeploys = arg('--redeploys', 5);
  let lab: EdgeLab | null = null;
  let server: TestServer | null = null;
  let appName = '';
  try {
    await ensureBaseImage();
    const dockerfile = [
      `FROM ${BASE_IMAGE}`,
      'EXPOSE 8080',
      `CMD ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www; hostname > /www/index.html; httpd -f -p 8080 -h /www & wait"]`,
    ].join('\n');
    await run(
      'sh',
      [
        '-c',
        'printf "%s\\n" "$1" | docker build -q --network none --label svc.bench=edge -t "$2" -',
        'sh',
        dockerfile,
        IMAGE,
      ],
      { timeout: 120_000 },
    );
    lab = await startEdgeLab();
    server = await startTestServer({ ...lab.vars }, { edge: { checkIntervalMs: 2000, checkerTickMs: 500 } });
    const c = await adminClient(server);
    appName = `bench-edge-${process.pid}`;
    const app = (await c.req('POST', '/api/apps', { name: appName, source: { type: 'image', image: IMAGE } }))
      .body.app;
    await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080 });
    await deploy(c, app.id);
    const dom = await c.req('POST', `/api/apps/${app.id}/domains`, { hostname: HOST, service: 'app' });
    if (dom.status !== 201) throw new Error(`domain: ${dom.status} ${dom.text}`);
    await poll('the domain over HTTPS', async () => (await lab!.https(HOST)).status === 200, 120_000, 250);
    const ct = (await listAppContainers(server.env.engine, appName)).find((x) => x.state === 'running')!;
    const ip = (await containerAddress(server.env.engine, appName, ct.id))!;
    console.log(
      `app ${appName}: container ${ct.name} at ${ip}:8080 (no host port published); domain ${HOST} with a Pebble certificate`,
    );

    const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: concurrency });
    const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: concurrency });
    const viaCaddy = async () => (await lab!.https(HOST, '/', { agent: httpsAgent })).status;
    const toContainer = () => direct(httpAgent, ip);
    // Warm both paths (connections, TLS sessions) before timing.
    await load(200, concurrency, toContainer);
    await load(200, concurrency, viaCaddy);
    const d: Array<{ rps: number; meanMs: number; errors: number }> = [];
    const p: Array<{ rps: number; meanMs: number; errors: number }> = [];
    for (let round = 0; round < 2; round++) {
      d.push(await load(total, concurrency, toContainer));
      p.push(await load(total, concurrency, viaCaddy));
    }
    const avg = (xs: typeof d, k: 'rps' | 'meanMs') => xs.reduce((n, x) => n + x[k], 0) / xs.length;
    const dr = avg(d, 'rps');
    const pr = avg(p, 'rps');
    console.log(
      `direct to the container : ${dr.toFixed(0)} req/s, mean ${avg(d, 'meanMs').toFixed(2)} ms (${total} requests x2, ${concurrency} in flight, errors ${d.reduce((n, x) => n + x.errors, 0)})`,
    );
    console.log(
      `through Caddy (HTTPS)   : ${pr.toFixed(0)} req/s, mean ${avg(p, 'meanMs').toFixed(2)} ms (errors ${p.reduce((n, x) => n + x.errors, 0)})`,
    );
    console.log(
      `proxy overhead          : throughput ${(pr / dr).toFixed(2)}x of direct; latency ${(avg(p, 'meanMs') / avg(d, 'meanMs')).toFixed(2)}x`,
    );
    httpAgent.destroy();
    httpsAgent.destroy();

    const stats = { ok: 0, lost: [] as string[], retried: 0 };
    let stop = false;
    const keep = new HttpsAgent({ keepAlive: true, maxSockets: 2 });
    // A request that finds its kept-alive connection closed (by a reload) before any answer is
    // retried once, as browsers do; counted apart. A second failure is a loss.
    const once = async (agent: HttpsAgent | false) => {
      try {
        return await lab!.https(HOST, '/', { agent });
      } catch (e) {
        if (!(e as { reused?: boolean }).reused) throw e;
        stats.retried++;
        // On a new connection: the other pooled ones were closed by the same reload.
        return lab!.https(HOST, '/', { agent: false });
      }
    };
    const loop = async (agent: HttpsAgent | false) => {
      while (!stop) {
        try {
          const r = await once(agent);
          if (r.status === 200) stats.ok++;
          else stats.lost.push(`HTTP ${r.status}`);
        } catch (e) {
          stats.lost.push((e as Error).message);
        }
      }
    };
    const loops = [loop(false), loop(false), loop(keep), loop(keep)];
    const t0 = performance.now();
    try {
      for (let i = 0; i < redeploys; i++) await deploy(c, app.id);
    } finally {
      stop = true;
      await Promise.all(loops);
      keep.destroy();
    }
    const secs = (performance.now() - t0) / 1000;
    console.log(
      `redeploys under load    : ${redeploys} redeploys in ${secs.toFixed(1)} s, ${stats.ok + stats.lost.length} requests, lost ${stats.lost.length} (goal 0), retried on a closed kept-alive connection ${stats.retried}${stats.lost.length ? `: ${[...new Set(stats.lost)].slice(0, 5).join('; ')}` : ''}`,
    );
  } finally {
    if (server && appName) await cleanupApp(server.env.engine, appName);
    await server?.stop();
    await lab?.stop();
    await run('docker', ['image', 'rm', '-f', IMAGE]).catch(() => {});
  }
}

await main();
