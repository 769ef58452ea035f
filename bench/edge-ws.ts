// npm run bench:edge-ws  [-- --sockets 100 --deploys-y 20 --deploys-x 5 --drain 5]
//
// WebSockets through Caddy across deploys. Real components: Caddy (its own process, admin API
// only), Pebble, the control plane with its API, apps on dockerd. App X speaks WebSocket (the echo
// app of tests/_support/wsapp.ts), app Y is a plain web app; both are served over HTTPS on their
// automatic hosts.
// - `--sockets` WebSockets to X stay open (each one echoes a frame when opened, so it is known to
//   reach X's container) while Y is redeployed `--deploys-y` times, then X `--deploys-x` times
//   with `drain_s` = `--drain`.
// - Four loops request X and Y over HTTPS the whole time (two on a new connection per request,
//   two on kept-alive ones).
// Prints, with the goals: sockets to X closed during Y's deploys (0); sockets opened before a
// switch of X that closed less than drain_s after it (0; the others close when their old container
// is retired after drain_s, and are opened again); requests lost (0); configs loaded, as the
// control plane counts them and as Caddy's log shows them (0). And the machine's load.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadavg } from 'node:os';
import { Agent as HttpsAgent } from 'node:https';
import type WebSocket from 'ws';
import { startEdgeLab, type EdgeLab } from '../tests/_support/edge.js';
import { ensureBaseImage, BASE_IMAGE } from '../tests/_support/docker.js';
import { ensureStackImages } from '../tests/_support/stackimages.js';
import { startTestServer, adminClient, type TestServer, type Client } from '../tests/_support/server.js';
import { waitStatus, cleanupApp } from '../tests/engine/_deploy.js';
import { poll } from '../tests/_support/wait.js';
import { buildEchoImage, nextMessage, opened, wsThroughCaddy } from '../tests/_support/wsapp.js';
import { arg } from './_args.js';

const run = promisify(execFile);
const WEB_IMAGE = `svc-bench/edge-ws-web:${process.pid}`;
const WS_IMAGE = `svc-bench/edge-ws-echo:${process.pid}`;
const BASE = 'edgews.test';

interface Sock {
  ws: WebSocket;
  openedAt: number;
  closedAt: number | null;
}

async function buildWeb(): Promise<void> {
  const dockerfile = [
    `FROM ${BASE_IMAGE}`,
    'EXPOSE 8080',
    `CMD ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www; hostname > /www/index.html; httpd -f -p 8080 -h /www & wait"]`,
  ].join('\n');
  await run(
    'sh',
    [
      '-c',
      'printf "%s\\n" "$1" | docker build -q --network none --label svc.bench=edge-ws -t "$2" -',
      'sh',
      dockerfile,
      WEB_IMAGE,
    ],
    { timeout: 120_000 },
  );
}

/** Deploys and waits for success; resolves with when Caddy took the switch (the log line's time). */
async function deploy(c: Client, appId: string): Promise<number> {
  const d = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  if (d.status !== 202) throw new Error(`deploy: ${d.status} ${d.text}`);
  await waitStatus(c, appId, d.body.deployment.id, ['succeeded']);
  const lines = (await c.req('GET', `/api/apps/${appId}/deployments/${d.body.deployment.id}/logs`)).body
    .items as Array<{ at: string; line: string }>;
  const sw = lines.find((l) => /proxy: routes switched/.test(l.line));
  if (!sw) throw new Error('no switch in the deployment log');
  return Date.parse(sw.at);
}

async function app(c: Client, name: string, image: string): Promise<string> {
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image } });
  if (r.status !== 201) throw new Error(`app: ${r.status} ${r.text}`);
  await c.req('PATCH', `/api/apps/${r.body.app.id}/services/app`, { port: 8080 });
  await deploy(c, r.body.app.id);
  return r.body.app.id;
}

/** Requests loops over HTTPS to the hosts until stopped: answered and lost. */
function requestLoops(lab: EdgeLab, hosts: string[]) {
  const stats = { ok: 0, lost: [] as string[] };
  let stop = false;
  const keep = new HttpsAgent({ keepAlive: true, maxSockets: 2 });
  const loop = async (agent: HttpsAgent | false) => {
    for (let i = 0; !stop; i++) {
      const host = hosts[i % hosts.length]!;
      try {
        const r = await lab.https(host, '/', { agent });
        if (r.status === 200) stats.ok++;
        else stats.lost.push(`${host}: HTTP ${r.status}`);
      } catch (e) {
        stats.lost.push(`${host}: ${(e as Error).message}`);
      }
    }
  };
  const loops = [loop(false), loop(false), loop(keep), loop(keep)];
  return {
    stats,
    async stop() {
      stop = true;
      await Promise.all(loops);
      keep.destroy();
    },
  };
}

/** Waits until Caddy's log shows no config load for 5 s: the checker has seen every new certificate. */
async function quiet(lab: EdgeLab): Promise<void> {
  let last = -1;
  await poll(
    'no config load for 5 s',
    async () => {
      await new Promise((r) => setTimeout(r, 5000));
      const now = lab.caddyLoads();
      const still = now === last;
      last = now;
      return still ? true : null;
    },
    120_000,
    0,
  );
}

/** WebSockets to `host`, each known to reach the app (it echoed a frame when opened). */
function socketPool(lab: EdgeLab, host: string) {
  const socks: Sock[] = [];
  const open = async () => {
    const ws = opened(await wsThroughCaddy(lab, host));
    const s: Sock = { ws, openedAt: Date.now(), closedAt: null };
    ws.once('close', () => (s.closedAt = Date.now()));
    const reply = nextMessage(ws);
    ws.send('hello');
    await reply;
    socks.push(s);
  };
  const live = () => socks.filter((s) => s.closedAt === null);
  return {
    socks,
    live,
    async fill(count: number) {
      while (live().length < count) await open();
    },
  };
}

/** X's redeploys: the sockets open at each switch, closed before drain_s or after it. */
async function redeploysOfX(
  c: Client,
  x: string,
  pool: ReturnType<typeof socketPool>,
  o: { deploys: number; drainS: number; count: number },
): Promise<{ early: number; drained: number }> {
  let early = 0;
  let drained = 0;
  for (let i = 0; i < o.deploys; i++) {
    const at = await deploy(c, x);
    const before = pool.live().filter((s) => s.openedAt < at);
    // The old container goes after drain_s; its sockets close then, and are opened again.
    await poll(
      'the old sockets closed',
      () => (before.every((s) => s.closedAt !== null) ? true : null),
      120_000,
      100,
    );
    for (const s of before) {
      if (s.closedAt! - at < o.drainS * 1000) early++;
      else drained++;
    }
    await pool.fill(o.count);
  }
  return { early, drained };
}

async function main(): Promise<void> {
  const count = arg('--sockets', 100);
  const deploysY = arg('--deploys-y', 20);
  const deploysX = arg('--deploys-x', 5);
  const drainS = arg('--drain', 5);
  let lab: EdgeLab | null = null;
  let server: TestServer | null = null;
  const names = [`bench-wsx-${process.pid}`, `bench-wsy-${process.pid}`];
  try {
    await ensureBaseImage();
    const images = await ensureStackImages();
    await buildWeb();
    await buildEchoImage(WS_IMAGE, images.node, 'edge-ws');
    lab = await startEdgeLab();
    server = await startTestServer(
      { ...lab.vars, SVC_BASE_DOMAIN: BASE },
      { edge: { checkIntervalMs: 2000, checkerTickMs: 500 } },
    );
    const c = await adminClient(server);
    const x = await app(c, names[0]!, WS_IMAGE);
    const y = await app(c, names[1]!, WEB_IMAGE);
    const [hx, hy] = names.map((n) => `${n}.${BASE}`) as [string, string];
    await c.req('PATCH', `/api/apps/${x}/services/app`, { drain_s: drainS });
    for (const h of [hx, hy])
      await poll(
        `${h} over HTTPS`,
        async () => (await lab!.https(h).catch(() => null))?.status === 200,
        120_000,
        250,
      );
    await quiet(lab);

    const pool = socketPool(lab, hx);
    await pool.fill(count);
    const loads0 = [server.env.edge.proxy.state().loads, lab.caddyLoads()];
    const load0 = loadavg()[0]!;
    const requests = requestLoops(lab, [hx, hy]);
    const t0 = Date.now();
    for (let i = 0; i < deploysY; i++) await deploy(c, y);
    const duringY = pool.socks.filter((s) => s.closedAt !== null).length;
    const yMs = Date.now() - t0;
    const t1 = Date.now();
    const { early, drained } = await redeploysOfX(c, x, pool, { deploys: deploysX, drainS, count });
    const xMs = Date.now() - t1;
    await requests.stop();
    const loads = [server.env.edge.proxy.state().loads - loads0[0]!, lab.caddyLoads() - loads0[1]!];
    const { ok, lost } = requests.stats;
    const met = duringY === 0 && early === 0 && lost.length === 0 && loads[0] === 0 && loads[1] === 0;
    console.log(`WebSockets through Caddy across deploys (${count} sockets to X, drain_s ${drainS})`);
    console.log(
      `  ${deploysY} redeploys of Y in ${(yMs / 1000).toFixed(1)} s: sockets to X closed ${duringY} (goal 0)`,
    );
    console.log(
      `  ${deploysX} redeploys of X in ${(xMs / 1000).toFixed(1)} s: sockets opened before a switch closed before drain_s ${early} (goal 0); closed when their container was retired after drain_s ${drained}`,
    );
    console.log(
      `  requests through Caddy meanwhile: ${ok + lost.length}, lost ${lost.length} (goal 0)${lost.length ? `: ${[...new Set(lost)].slice(0, 5).join('; ')}` : ''}`,
    );
    console.log(
      `  configs loaded: ${loads[0]} by the control plane's count, ${loads[1]} in Caddy's log (goal 0)`,
    );
    console.log(
      `  machine load (1-minute average): ${load0.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end; ${met ? 'every goal met' : 'NOT every goal met'}`,
    );
    for (const s of pool.socks) s.ws.terminate();
  } finally {
    if (server) for (const n of names) await cleanupApp(server.env.engine, n);
    await server?.stop();
    await lab?.stop();
    await run('docker', ['image', 'rm', '-f', WEB_IMAGE, WS_IMAGE]).catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
