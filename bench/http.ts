// npm run bench:http — the real server against a bare node:http server answering fixed JSON,
// both loaded by autocannon from a separate process at the same concurrency, in one run.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { SERVE_NODE_OPTIONS } from '#lib/install/texts.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SETTLE_MS = 12_000;
// The goals: each route at least this fraction of bare node:http's throughput, and idle memory.
const RATIO_GOALS = { health: 0.75, me: 0.7 };
const RSS_GOAL_MB = 70;

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

/** CPU time (user + system) the process has used, in microseconds. */
async function cpuUs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

interface Load {
  /** Requests per second (autocannon's average). */
  rps: number;
  /** The server's CPU time per answered request, in microseconds. */
  cpu: number;
}

/**
 * Throughput depends on what else the shared cores are doing; CPU time per request much less, so
 * both are reported. Either is compared only with the bare server's figure of the same round.
 */
async function load(url: string, pid: number, headers: Record<string, string> = {}): Promise<Load> {
  const args = [
    join(root, 'node_modules/autocannon/autocannon.js'),
    '-j',
    '-c',
    String(CONNECTIONS),
    '-d',
    String(DURATION),
  ];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  const before = await cpuUs(pid);
  const { stdout } = await run(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 });
  const used = (await cpuUs(pid)) - before;
  const r = JSON.parse(stdout);
  if (r.non2xx > 0 || r.errors > 0)
    throw new Error(`load on ${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, cpu: used / r.requests.total };
}

const bareSource = `
const http = require('node:http');
const body = JSON.stringify({ status: 'ok', db: 'ok' });
http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }); res.end(body); })
  .listen(Number(process.argv[1]), '127.0.0.1');
`;

/** The real server as `npm start`, the unit and the image start it: with the same Node.js options. */
async function startSvc(dataDir: string): Promise<{ proc: ChildProcess; base: string; bootMs: number }> {
  const port = await freePort();
  const started = process.hrtime.bigint();
  const proc = spawn(process.execPath, [...SERVE_NODE_OPTIONS, join(root, 'dist/runtime/cli.js'), 'serve'], {
    env: {
      ...process.env,
      SVC_DATA_DIR: dataDir,
      SVC_PORT: String(port),
      SVC_HOST: '127.0.0.1',
      SVC_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  return { proc, base, bootMs: await waitHealthy(base + '/api/health', started) };
}

/** An operator and an API token of theirs (made after a step-up, as the route asks). */
async function apiTokenOf(base: string, dataDir: string): Promise<string> {
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  const admin = { username: 'bench', password: 'bench password 123456' };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  await post('/api/setup/admin', { token, ...admin });
  const login = await post('/api/auth/login', admin);
  const cookies = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /svc_csrf=([^;]+)/.exec(cookies)![1]!;
  const session = { cookie: cookies, 'x-csrf-token': csrf };
  await post('/api/auth/step-up', { password: admin.password }, session);
  const made = await post('/api/auth/api-tokens', { name: 'bench' }, session);
  return ((await made.json()) as { token: string }).token;
}

type Runs = Record<'bare' | 'health' | 'me', Load[]>;

/**
 * Warms both up so JIT state is comparable, then interleaves the runs: on a shared machine the
 * background load drifts, and alternating keeps each ratio's two sides under the same load.
 */
async function measure(
  bare: { url: string; pid: number },
  svc: { base: string; pid: number },
  token: string,
) {
  await load(bare.url, bare.pid).catch(() => 0);
  await load(svc.base + '/api/health', svc.pid).catch(() => 0);
  const runs: Runs = { bare: [], health: [], me: [] };
  for (let round = 0; round < ROUNDS; round++) {
    runs.bare.push(await load(bare.url, bare.pid));
    runs.health.push(await load(svc.base + '/api/health', svc.pid));
    runs.me.push(await load(svc.base + '/api/auth/me', svc.pid, { authorization: `Bearer ${token}` }));
  }
  return runs;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function report(runs: Runs, idle: { rss: number; settled: number; bootMs: number }): void {
  // Each round's ratio against the bare run just before it, then the median of those ratios.
  const ratios = (side: 'health' | 'me', of: (l: Load) => number) =>
    runs[side].map((l, i) => of(l) / of(runs.bare[i]!));
  const rpsRatio = (side: 'health' | 'me') => ratios(side, (l) => l.rps);
  // Throughput on a core of its own is the inverse of CPU time per request: the steadier estimate on
  // a shared machine, shown beside the goal's own measure (req/s), which alone decides the verdict.
  const cpuRatio = (side: 'health' | 'me') => ratios(side, (l) => 1 / l.cpu);
  const verdict = (r: number, goal: number) => (r >= goal ? 'meets' : 'MISSES');
  const fmt = (n: number) => n.toFixed(0).padStart(8);
  const us = (xs: Load[]) =>
    median(xs.map((l) => l.cpu))
      .toFixed(1)
      .padStart(5);
  console.log(
    `connections ${CONNECTIONS}, ${DURATION}s per run, ${ROUNDS} interleaved rounds (medians), loaded from a separate autocannon process`,
  );
  console.log(`                         req/s      server CPU/request   ratio to bare: req/s  CPU   goal`);
  console.log(`bare node:http          ${fmt(median(runs.bare.map((l) => l.rps)))}      ${us(runs.bare)} us`);
  for (const [side, label] of [
    ['health', 'GET /api/health        '],
    ['me', 'GET /api/auth/me bearer'],
  ] as const) {
    const r = median(rpsRatio(side));
    const c = median(cpuRatio(side));
    const goal = RATIO_GOALS[side];
    console.log(
      `${label} ${fmt(median(runs[side].map((l) => l.rps)))}      ${us(runs[side])} us           ${r.toFixed(2)}  ${c.toFixed(2)}  >= ${goal}: ${verdict(r, goal)}`,
    );
  }
  const perRound = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `per round, req/s ratio: health ${perRound(rpsRatio('health'))}; auth/me ${perRound(rpsRatio('me'))}`,
  );
  console.log(
    `per round, CPU ratio:   health ${perRound(cpuRatio('health'))}; auth/me ${perRound(cpuRatio('me'))}`,
  );
  console.log(
    `idle RSS after start-up ${idle.rss.toFixed(1)} MB (goal < ${RSS_GOAL_MB}: ${idle.rss < RSS_GOAL_MB ? 'meets' : 'MISSES'}); ${idle.settled.toFixed(1)} MB after ${SETTLE_MS / 1000} s more idle`,
  );
  console.log(`start to first health   ${idle.bootMs.toFixed(0)} ms (goal < 500)`);
}

async function main() {
  const children: ChildProcess[] = [];
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  try {
    const barePort = await freePort();
    const bareProc = spawn(process.execPath, ['-e', bareSource, String(barePort)], { stdio: 'ignore' });
    children.push(bareProc);
    const bareUrl = `http://127.0.0.1:${barePort}/`;
    await waitHealthy(bareUrl, process.hrtime.bigint());
    const svc = await startSvc(dataDir);
    children.push(svc.proc);
    // Default configuration (the traffic monitor on). Measured 1.5 s after the first answer, and
    // again once V8 has had time to give back what start-up allocated (its memory reducer runs
    // a few seconds after activity stops).
    await new Promise((r) => setTimeout(r, 1500));
    const rss = await rssMb(svc.proc.pid!);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const settled = await rssMb(svc.proc.pid!);
    const token = await apiTokenOf(svc.base, dataDir);
    const runs = await measure(
      { url: bareUrl, pid: bareProc.pid! },
      { base: svc.base, pid: svc.proc.pid! },
      token,
    );
    report(runs, { rss, settled, bootMs: svc.bootMs });
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
