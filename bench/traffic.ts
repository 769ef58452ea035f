// npm run bench:traffic  [-- --lines 1000000 --addresses 100000 --rounds 3 --keep]
//
// Generates a Caddy-format JSON access log, then times over the same file:
//   (a) a bare loop: read the file in 64 KiB chunks, split lines, JSON.parse each;
//   (b) this project's tailer (from the start) feeding the traffic monitor;
//   (c) GoAccess with its CADDY log format (Debian package `goaccess`), if installed.
// (a) and (b) each run in their own child process (alternated, best of --rounds runs), so peak RSS is theirs alone.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AccessLogTailer } from '#lib/traffic/tailer.js';
import { TrafficMonitor } from '#lib/traffic/monitor.js';
import { arg, parseJsonLines, rng, writeLines } from './_args.js';

interface ChildResult {
  lines: number;
  ms: number;
  /** CPU time (user + system) of the timed part: steadier than wall time on a busy machine. */
  cpuMs: number;
  maxRssKiB: number;
  rssSamplesMiB?: number[];
  trackedIps?: number;
  anomalies?: Record<string, number>;
  parseErrors?: number;
}

function address(i: number): string {
  // One address in ten is IPv6; the rest spread over 10.0.0.0/8.
  if (i % 10 === 9) return `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

function generate(path: string, lines: number, addresses: number): void {
  const rand = rng(42);
  const hosts = ['shop.example.test', 'api.example.test', 'blog.example.test'];
  const paths = ['/', '/login', '/api/items', '/static/app.js', '/favicon.ico', '/wp-login.php'];
  const agents = [
    'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0',
    'curl/8.4.0',
    'Go-http-client/1.1',
  ];
  const start = 1_700_000_000;
  writeLines(path, lines, (n) => {
    // A fifth of the traffic comes from 10 busy addresses (they trip the monitor), the rest
    // from the whole population, so the per-IP table churns through every address.
    const ip = address(rand() < 0.2 ? Math.floor(rand() * 10) : Math.floor(rand() * addresses));
    const r = rand();
    const status = r < 0.9 ? 200 : r < 0.97 ? 404 : 502;
    const ts = start + n / 1000 + rand() / 1000;
    return JSON.stringify({
      level: status >= 500 ? 'error' : 'info',
      ts,
      logger: 'http.log.access.log0',
      msg: 'handled request',
      request: {
        remote_ip: ip,
        remote_port: String(1024 + Math.floor(rand() * 60000)),
        client_ip: ip,
        proto: 'HTTP/2.0',
        method: rand() < 0.8 ? 'GET' : 'POST',
        host: hosts[n % hosts.length],
        uri: `${paths[Math.floor(rand() * paths.length)]}?q=${n}`,
        headers: {
          'User-Agent': [agents[n % agents.length]],
          Accept: ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
          'Accept-Encoding': ['gzip, deflate, br'],
        },
        tls: {
          resumed: false,
          version: 772,
          cipher_suite: 4865,
          proto: 'h2',
          server_name: hosts[n % hosts.length],
        },
      },
      bytes_read: 0,
      user_id: '',
      duration: rand() / 50,
      size: Math.floor(rand() * 20000),
      status,
      resp_headers: { Server: ['Caddy'], 'Content-Type': ['text/html; charset=utf-8'] },
    });
  });
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

function childBare(path: string): ChildResult {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const lines = parseJsonLines(path);
  const ms = performance.now() - t0;
  const cpuMs = cpuMsSince(cpu0);
  return { lines, ms, cpuMs, maxRssKiB: process.resourceUsage().maxRSS };
}

async function childTailer(path: string): Promise<ChildResult> {
  const samples: number[] = [];
  const monitor = new TrafficMonitor({ now: () => 1_700_000_000_000 + 3_600_000 });
  const tailer = new AccessLogTailer(path, { fromStart: true, watch: false, pollIntervalMs: 3_600_000 });
  let seen = 0;
  tailer.subscribe(monitor.observe);
  tailer.subscribe(() => {
    if (++seen % 100_000 === 0) samples.push(Math.round(process.memoryUsage.rss() / 1048576));
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  tailer.start();
  await tailer.catchUp();
  const ms = performance.now() - t0;
  const cpuMs = cpuMsSince(cpu0);
  const st = tailer.status();
  await tailer.stop();
  const stats = monitor.stats();
  monitor.snapshot();
  return {
    lines: st.lines,
    ms,
    cpuMs,
    maxRssKiB: process.resourceUsage().maxRSS,
    rssSamplesMiB: samples,
    trackedIps: stats.tracked_ips,
    anomalies: stats.anomalies,
    parseErrors: st.parseErrors,
  };
}

function runChild(mode: string, path: string): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const self = fileURLToPath(import.meta.url);
    const p = spawn(process.execPath, [self, '--child', mode, path], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${mode} child exited with ${code}`));
      else resolve(JSON.parse(out) as ChildResult);
    });
  });
}

function goaccess(path: string, dir: string): { ms: number; lines: number } | { error: string } {
  const t0 = performance.now();
  const r = spawnSync(
    'goaccess',
    [path, '--log-format=CADDY', '--no-global-config', '-o', join(dir, 'goaccess.json')],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const ms = performance.now() - t0;
  if (r.error)
    return {
      error:
        (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'goaccess is not installed' : r.error.message,
    };
  if (r.status !== 0) return { error: `goaccess exited with ${r.status}: ${String(r.stderr).slice(-300)}` };
  return { ms, lines: -1 };
}

const rate = (lines: number, ms: number) => Math.round(lines / (ms / 1000));
const fmt = (n: number) => n.toLocaleString('en-US');

async function main(): Promise<void> {
  const ci = process.argv.indexOf('--child');
  if (ci !== -1) {
    const mode = process.argv[ci + 1];
    const path = process.argv[ci + 2];
    const result = mode === 'bare' ? childBare(path) : await childTailer(path);
    process.stdout.write(JSON.stringify(result));
    return;
  }
  const lines = arg('--lines', 1_000_000);
  const addresses = arg('--addresses', 100_000);
  const rounds = arg('--rounds', 3);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-traffic-'));
  const path = join(dir, 'access.log');
  try {
    const t0 = performance.now();
    generate(path, lines, addresses);
    const size = statSync(path).size;
    console.log(
      `generated ${fmt(lines)} lines from ${fmt(addresses)} addresses, ${(size / 1048576).toFixed(0)} MiB, in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );

    // Warm the page cache once so no contender pays for the first read from disk.
    await runChild('bare', path);

    // Alternate the contenders and keep each one's best run: noise from other work on the
    // machine only ever slows a run down.
    const as: ChildResult[] = [];
    const bs: ChildResult[] = [];
    for (let i = 0; i < rounds; i++) {
      as.push(await runChild('bare', path));
      bs.push(await runChild('tailer', path));
    }
    const best = (xs: ChildResult[]) => xs.reduce((m, x) => (x.ms < m.ms ? x : m));
    const a = best(as);
    const b = best(bs);
    const aCpu = Math.min(...as.map((x) => x.cpuMs));
    const bCpu = Math.min(...bs.map((x) => x.cpuMs));
    if (as.some((x) => x.lines !== lines) || bs.some((x) => x.lines !== lines)) {
      throw new Error(`line counts differ: bare ${a.lines}, tailer ${b.lines}, expected ${lines}`);
    }
    const c = goaccess(path, dir);

    const ra = rate(a.lines, a.ms);
    const rb = rate(b.lines, b.ms);
    console.log('');
    console.log(
      `(a) bare read + JSON.parse   ${fmt(ra).padStart(11)} lines/s   (${(a.ms / 1000).toFixed(2)} s, peak RSS ${(a.maxRssKiB / 1024).toFixed(0)} MiB)`,
    );
    console.log(
      `(b) tailer + monitor         ${fmt(rb).padStart(11)} lines/s   (${(b.ms / 1000).toFixed(2)} s, peak RSS ${(b.maxRssKiB / 1024).toFixed(0)} MiB)`,
    );
    if ('error' in c) console.log(`(c) GoAccess (CADDY)         skipped: ${c.error}`);
    else
      console.log(
        `(c) GoAccess (CADDY)         ${fmt(rate(lines, c.ms)).padStart(11)} lines/s   (${(c.ms / 1000).toFixed(2)} s, process start included)`,
      );
    console.log('');
    console.log(
      `ratio b/a: ${(rb / ra).toFixed(2)} by wall time, ${(aCpu / bCpu).toFixed(2)} by CPU time (goal >= 0.70; best of ${rounds} runs each)`,
    );
    if (!('error' in c)) console.log(`b vs c: ${(rb / rate(lines, c.ms)).toFixed(1)}x (goal > 1)`);
    console.log(
      `monitor: tracked IPs at the end ${b.trackedIps} (bound 1024), anomalies ${JSON.stringify(b.anomalies)}, parse errors ${b.parseErrors}`,
    );
    console.log(`monitor RSS every 100k lines (MiB): ${b.rssSamplesMiB?.join(' ')}`);
  } finally {
    if (!process.argv.includes('--keep')) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
