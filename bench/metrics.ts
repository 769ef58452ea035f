// npm run bench:metrics  [-- --lines 1000000 --hosts 50 --queries 100 --keep]
//
// 1. Ingest: generates a Caddy-format JSON access log (`--lines` lines over `--hosts` hosts, one
//    line per millisecond), then times over the same file, each in its own child process:
//    (a) a bare loop: read in 64 KiB chunks, split lines, JSON.parse each;
//    (b) this project's tailer (from the start) feeding the request series (attribution of every
//        host, 10 s buckets with histograms, written to SQLite with their 1 min and 1 h roll-ups).
//    Prints lines/s of each and the ratio (goal: at least 0.5x), and RSS along (b) (goal: flat).
// 2. Query: an app with 90 days of history at every resolution (as retention leaves it); every
//    range queried `--queries` times: p50/p95 per range (goal: p95 under 20 ms); the row count.
//    Each range reads rows of its own step (lib/series/store.ts), at most 360 per series.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AccessLogTailer } from '#lib/traffic/tailer.js';
import { RequestSeries } from '#lib/series/requests.js';
import { addRequestBuckets, newAcc, type RequestRowWrite } from '#lib/series/store.js';
import { bucketOf } from '#lib/util/histogram.js';
import { queryRequests, RANGE_NAMES, RANGES } from '#lib/series/query.js';
import { migrate, openDb, rawConnection } from '#lib/db/index.js';
import { arg, parseJsonLines, rng, writeLines } from './_args.js';

const START_S = 1_700_000_000;

const hostName = (i: number) => `app${i}.bench.test`;

function generate(path: string, lines: number, hosts: number): void {
  const rand = rng(7);
  writeLines(path, lines, (n) => {
    const r = rand();
    const status = r < 0.9 ? 200 : r < 0.97 ? 404 : 502;
    const host = hostName(n % hosts);
    return JSON.stringify({
      level: 'info',
      ts: START_S + n / 1000,
      logger: 'http.log.access.svc',
      msg: 'handled request',
      request: {
        remote_ip: `10.0.${(n >> 8) & 255}.${n & 255}`,
        remote_port: '40000',
        client_ip: `10.0.${(n >> 8) & 255}.${n & 255}`,
        proto: 'HTTP/2.0',
        method: 'GET',
        host: n % 7 === 0 ? `${host}:443` : host,
        uri: `/items/${n % 1000}?q=${n}`,
      },
      bytes_read: 0,
      user_id: '',
      duration: (rand() * rand()) / 5,
      size: Math.floor(rand() * 20000),
      status,
    });
  });
}

interface ChildResult {
  lines: number;
  ms: number;
  rssSamplesMiB?: number[];
  rows?: number;
}

function childBare(path: string): ChildResult {
  const t0 = performance.now();
  const lines = parseJsonLines(path);
  return { lines, ms: performance.now() - t0 };
}

async function childSeries(path: string, hosts: number, dir: string): Promise<ChildResult> {
  const db = openDb(dir);
  await migrate(db);
  const lines = Number(process.argv[process.argv.indexOf('--lines-total') + 1]);
  // The clock stands at the end of the log, so every bucket is within retention and complete.
  const endMs = START_S * 1000 + lines + 60_000;
  const map = new Map<string, { appId: string; service: string }>();
  for (let i = 0; i < hosts; i++)
    map.set(hostName(i), { appId: `app${String(i).padStart(4, '0')}`, service: 'web' });
  const series = new RequestSeries({ db, now: () => endMs, attribution: async () => map });
  series.setAttribution(map);
  const tailer = new AccessLogTailer(path, { fromStart: true, watch: false, pollIntervalMs: 3_600_000 });
  const samples: number[] = [];
  let seen = 0;
  tailer.subscribe(series.observe);
  tailer.subscribe(() => {
    if (++seen % 100_000 === 0) samples.push(Math.round(process.memoryUsage.rss() / 1048576));
  });
  const t0 = performance.now();
  tailer.start();
  await tailer.catchUp();
  series.flush(true);
  const ms = performance.now() - t0;
  const st = tailer.status();
  await tailer.stop();
  const rows = (rawConnection(db).prepare('select count(*) as n from request_series').get() as { n: number })
    .n;
  await db.destroy();
  return { lines: st.lines, ms, rssSamplesMiB: samples, rows };
}

function runChild(args: string[]): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('exit', (code) =>
      code !== 0 ? reject(new Error(`child exited with ${code}`)) : resolve(JSON.parse(out) as ChildResult),
    );
  });
}

/** 90 days of one app's traffic at every resolution retention keeps, plus the host-wide rows. */
async function history(dir: string, nowMs: number): Promise<import('#lib/db/index.js').Db> {
  const db = openDb(dir);
  await migrate(db);
  const rand = rng(3);
  const nowS = Math.floor(nowMs / 1000);
  const acc = () => {
    const a = newAcc();
    const n = 20 + Math.floor(rand() * 40);
    for (let i = 0; i < n; i++) {
      a.requests++;
      a.hist[bucketOf(rand() * rand() * 400)]!++;
      a.bytes += 1500;
      if (rand() < 0.05) a.errors4xx++;
    }
    return a;
  };
  // Older than a day: one write per minute (10 s rows would be dropped by retention anyway).
  for (let t = nowS - 90 * 86_400; t < nowS - 86_400; t += 86_400) {
    const items: RequestRowWrite[] = [];
    for (let m = 0; m < 86_400; m += 60) {
      const a = acc();
      items.push(
        { appId: 'app-h', service: 'web', t: t + m, acc: a },
        { appId: '', service: '', t: t + m, acc: a },
      );
    }
    addRequestBuckets(db, items, nowMs);
  }
  const items: RequestRowWrite[] = [];
  for (let t = nowS - 86_400; t < nowS; t += 10) {
    const a = acc();
    items.push({ appId: 'app-h', service: 'web', t, acc: a }, { appId: '', service: '', t, acc: a });
  }
  addRequestBuckets(db, items, nowMs);
  return db;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    const mode = process.argv[3]!;
    const r =
      mode === 'bare'
        ? childBare(process.argv[4]!)
        : await childSeries(process.argv[4]!, Number(process.argv[5]), process.argv[6]!);
    process.stdout.write(JSON.stringify(r));
    return;
  }
  const lines = arg('--lines', 1_000_000);
  const hosts = arg('--hosts', 50);
  const queries = arg('--queries', 100);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-metrics-'));
  try {
    const log = join(dir, 'access.log');
    let t0 = performance.now();
    generate(log, lines, hosts);
    console.log(
      `generated ${fmt(lines)} lines for ${hosts} hosts (${(statSync(log).size / 1048576).toFixed(0)} MiB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const bare = await runChild(['bare', log]);
    const ours = await runChild([
      'series',
      log,
      String(hosts),
      join(dir, 'ingest'),
      '--lines-total',
      String(lines),
    ]);
    const bareRate = bare.lines / (bare.ms / 1000);
    const ourRate = ours.lines / (ours.ms / 1000);
    console.log(
      `bare JSON.parse loop : ${fmt(bareRate)} lines/s (${fmt(bare.lines)} lines, ${fmt(bare.ms)} ms)`,
    );
    console.log(
      `tailer + series      : ${fmt(ourRate)} lines/s (${fmt(ours.lines)} lines, ${fmt(ours.ms)} ms, ${fmt(ours.rows ?? 0)} rows written)`,
    );
    console.log(`ratio                : ${(ourRate / bareRate).toFixed(2)}x of the bare loop (goal >= 0.5x)`);
    const s = ours.rssSamplesMiB ?? [];
    console.log(
      `RSS every 100k lines : ${s.join(' ')} MiB (growth first->last ${s.length ? s[s.length - 1]! - s[0]! : 0} MiB)`,
    );

    const nowMs = Date.UTC(2026, 0, 1);
    t0 = performance.now();
    const db = await history(join(dir, 'history'), nowMs);
    const rows = (
      rawConnection(db).prepare('select count(*) as n from request_series').get() as { n: number }
    ).n;
    console.log(
      `90 days of history for one app written in ${((performance.now() - t0) / 1000).toFixed(1)} s; request_series rows: ${fmt(rows)}`,
    );
    // Percentiles of a few milliseconds are at the mercy of the scheduler on a shared machine.
    console.log(
      `load average at the query phase: ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${availableParallelism()} cores`,
    );
    // Baseline in the same run: SQLite alone handing back the same rows, nothing computed.
    const raw = rawConnection(db).prepare(
      'select t, requests, errors_4xx, errors_5xx, bytes_out, hist from request_series where res = ? and app_id = ? and t >= ? and t < ?',
    );
    for (const range of RANGE_NAMES) {
      const r = RANGES[range];
      const times: number[] = [];
      const base: number[] = [];
      // CPU time of this process per query: what the query costs, whatever else the machine runs.
      const cpu: number[] = [];
      let points = 0;
      let rowsRead = 0;
      for (let i = 0; i < queries; i++) {
        const b0 = performance.now();
        const end = Math.floor(nowMs / 1000 / r.step) * r.step + r.step;
        rowsRead = raw.all(r.res, 'app-h', end - r.seconds, end).length;
        base.push(performance.now() - b0);
        const q0 = performance.now();
        const c0 = process.cpuUsage();
        points = queryRequests(db, { appId: 'app-h', range, now: nowMs }).points.length;
        times.push(performance.now() - q0);
        const c1 = process.cpuUsage(c0);
        cpu.push((c1.user + c1.system) / 1000);
      }
      console.log(
        `query ${range.padEnd(3)}: ${points} points from ${rowsRead} rows, p50 ${pct(times, 0.5).toFixed(2)} ms, p95 ${pct(times, 0.95).toFixed(2)} ms (goal p95 < 20 ms), CPU p95 ${pct(cpu, 0.95).toFixed(2)} ms; ` +
          `bare select of the rows p50 ${pct(base, 0.5).toFixed(2)} ms, p95 ${pct(base, 0.95).toFixed(2)} ms`,
      );
    }
    await db.destroy();
  } finally {
    if (!process.argv.includes('--keep')) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
