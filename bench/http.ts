// npm run bench:http — the real server against a bare node:http server answering fixed JSON,
// both loaded by autocannon from a separate process at the same concurrency, in one run.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SETTLE_MS = 12_000;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function waitHealthy(url: string, started: bigint): Promise<number> {
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.ok) return Number(process.hrtime.bigint() - started) / 1e6;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function load(url: string, headers: Record<string, string> = {}): Promise<number> {
  const args = [join(root, 'node_modules/autocannon/autocannon.js'), '-j', '-c', String(CONNECTIONS), '-d', String(DURATION)];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  const { stdout } = await run(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 });
  const r = JSON.parse(stdout);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`load on ${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.requests.average;
}

const bareSource = `
const http = require('node:http');
const body = JSON.stringify({ status: 'ok', db: 'ok' });
http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }); res.end(body); })
  .listen(Number(process.argv[1]), '127.0.0.1');
`;

async function main() {
  const children: ChildProcess[] = [];
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  try {
    const barePort = await freePort();
    children.push(spawn(process.execPath, ['-e', bareSource, String(barePort)], { stdio: 'ignore' }));
    const bareUrl = `http://127.0.0.1:${barePort}/`;
    await waitHealthy(bareUrl, process.hrtime.bigint());

    const port = await freePort();
    const started = process.hrtime.bigint();
    const svc = spawn(process.execPath, [join(root, 'dist/runtime/cli.js'), 'serve'], {
      env: { ...process.env, SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_HOST: '127.0.0.1', SVC_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(svc);
    const base = `http://127.0.0.1:${port}`;
    const bootMs = await waitHealthy(base + '/api/health', started);
    // Default configuration (the traffic monitor on). Measured 1.5 s after the first answer, and
    // again once V8 has had time to give back what start-up allocated (its memory reducer runs
    // a few seconds after activity stops).
    await new Promise((r) => setTimeout(r, 1500));
    const idleRss = await rssMb(svc.pid!);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const settledRss = await rssMb(svc.pid!);

    const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
    const admin = { username: 'bench', password: 'bench password 123456' };
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    await post('/api/setup/admin', { token, ...admin });
    const login = await post('/api/auth/login', admin);
    const cookies = login.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const csrf = /svc_csrf=([^;]+)/.exec(cookies)![1]!;
    await post('/api/auth/step-up', { password: admin.password }, { cookie: cookies, 'x-csrf-token': csrf });
    const apiToken = ((await (await post('/api/auth/api-tokens', { name: 'bench' }, { cookie: cookies, 'x-csrf-token': csrf })).json()) as { token: string }).token;

    // Warm both up so JIT state is comparable, then interleave the runs: on a shared machine the
    // background load drifts, and alternating keeps each ratio's two sides under the same load.
    await load(bareUrl).catch(() => 0);
    await load(base + '/api/health').catch(() => 0);
    const runs: Record<'bare' | 'health' | 'me', number[]> = { bare: [], health: [], me: [] };
    for (let round = 0; round < ROUNDS; round++) {
      runs.bare.push(await load(bareUrl));
      runs.health.push(await load(base + '/api/health'));
      runs.me.push(await load(base + '/api/auth/me', { authorization: `Bearer ${apiToken}` }));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const bare = median(runs.bare);
    const health = median(runs.health);
    const me = median(runs.me);

    const fmt = (n: number) => n.toFixed(0).padStart(8);
    console.log(`connections ${CONNECTIONS}, ${DURATION}s per run, ${ROUNDS} interleaved rounds (medians), loaded from a separate autocannon process`);
    console.log(`bare node:http          ${fmt(bare)} req/s`);
    console.log(`GET /api/health         ${fmt(health)} req/s   ratio ${(health / bare).toFixed(2)} (goal >= 0.55)`);
    console.log(`GET /api/auth/me bearer ${fmt(me)} req/s   ratio ${(me / bare).toFixed(2)} (goal >= 0.40)`);
    const perRound = (xs: number[]) => xs.map((x, i) => (x / runs.bare[i]!).toFixed(2)).join(' ');
    console.log(`per round (each against the bare run just before it): health ${perRound(runs.health)}; auth/me ${perRound(runs.me)}`);
    console.log(`idle RSS after start-up ${idleRss.toFixed(1)} MB (goal < 80); ${settledRss.toFixed(1)} MB after ${SETTLE_MS / 1000} s more idle`);
    console.log(`start to first health   ${bootMs.toFixed(0)} ms (goal < 500)`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
