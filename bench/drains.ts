// npm run bench:drains  [-- --seconds 15 --apps 20 --rate 10000 --dead 40]
//
// The log drains' costs, the receiver always in a child process of its own (its CPU is not the
// control plane's):
// 1. One drain's throughput: lines offered as fast as the drain takes them, to an HTTP JSON
//    receiver on loopback; lines/s delivered, against a baseline measured in the same run (the
//    same batches only serialised, no network): the ratio says what delivery costs on top.
// 2. 10,000 lines/s from 20 apps (`--rate`, `--apps`), paced, into one drain for every app:
//    (a) handed to the drains as the collector would; (b) when the Docker engine answers, from
//        20 real containers through the collector (the engine's log streams read, demultiplexed,
//        split and timestamped here). Control-plane CPU as a share of one core and per 1,000
//        lines (goal: under 25% of one core), lines dropped (goal: none).
// 3. A dead receiver (nothing listens) for `--dead` seconds at the same rate: heap (after a GC)
//    and RSS every 5 s (goal: flat once the buffer is full), lines dropped counted.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { migrate, openDb, type Db } from '#lib/db/index.js';
import { createSealer } from '#lib/crypto/seal.js';
import { Bus } from '#lib/events/bus.js';
import { createEngine, type Engine } from '#lib/docker/engine.js';
import { freshOwner, ownerLabels } from '#lib/docker/owner.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_SERVICE } from '#lib/docker/names.js';
import { LogDrains } from '#lib/drains/service.js';
import { createDrain } from '#lib/drains/index.js';
import { getDrainRow } from '#lib/drains/store.js';
import { jsonBatch } from '#lib/drains/kinds/http-json.js';
import type { DrainLine } from '#lib/drains/kinds/index.js';
import { BATCH_LINES } from '#lib/drains/pipe.js';
import { arg } from './_args.js';
import { TEST_MASTER_KEY } from '../tests/_support/server.js';
import { BASE_IMAGE, DOCKER_SOCKET, dockerReachable, ensureBaseImage } from '../tests/_support/docker.js';

const SECONDS = arg('--seconds', 15);
const APPS = arg('--apps', 20);
const RATE = arg('--rate', 10_000);
const DEAD = arg('--dead', 40);
const ALLOW = { allow: ['127.0.0.1'] };

// The receiver: counts the lines of every JSON array it is posted; GET answers the count.
const RECEIVER = `
import { createServer } from 'node:http';
let lines = 0;
const s = createServer((req, res) => {
  if (req.method === 'GET') return res.end(String(lines));
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => { lines += JSON.parse(Buffer.concat(chunks).toString()).length; res.writeHead(200).end(); });
});
s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;

async function startReceiver(): Promise<{ port: number; child: ChildProcess; count(): Promise<number> }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((r) =>
    child.stdout!.once('data', (b: Buffer) => r(Number(b.toString().trim()))),
  );
  return { port, child, count: async () => Number(await (await fetch(`http://127.0.0.1:${port}/`)).text()) };
}

const deadPort = () =>
  new Promise<number>((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => r(p));
    });
  });

interface Setup {
  db: Db;
  dir: string;
  drains: LogDrains;
  engine: Engine;
  appIds: string[];
}

async function setup(apps: number): Promise<Setup> {
  const dir = mkdtempSync(`${tmpdir()}/svc-bench-drains-`);
  const db = openDb(dir);
  await migrate(db);
  const at = new Date().toISOString();
  const appIds: string[] = [];
  for (let i = 0; i < apps; i++) {
    const id = `benchapp${String(i).padStart(12, '0')}`;
    appIds.push(id);
    await db
      .insertInto('apps')
      .values({
        id,
        name: `bench-drains-${process.pid}-${i}`,
        source: '{}',
        status: 'running',
        created_at: at,
        updated_at: at,
      } as never)
      .execute();
  }
  const engine = createEngine({ socketPath: DOCKER_SOCKET, owner: freshOwner() });
  const drains = new LogDrains({
    db,
    sealer: createSealer(Buffer.from(TEST_MASTER_KEY, 'hex')),
    bus: new Bus(),
    engine,
    now: Date.now,
    swarm: false,
    bufferLines: 20_000,
    transport: ALLOW,
  });
  return { db, dir, drains, engine, appIds };
}

async function addDrain(s: Setup, port: number): Promise<string> {
  const d = await createDrain(
    { db: s.db, sealer: createSealer(Buffer.from(TEST_MASTER_KEY, 'hex')), guard: ALLOW },
    { name: 'bench', kind: 'http_json', url: `http://127.0.0.1:${port}/logs` },
    Date.now(),
  );
  await s.drains.reload();
  return d.id;
}

const line = (appId: string, app: number, n: number): DrainLine => ({
  at: Date.now(),
  appId,
  app: `app-${app}`,
  service: 'web',
  container: `app-${app}-web-1`,
  stream: 'stdout',
  source: 'container',
  line: `127.0.0.1 - - "GET /items/${n} HTTP/1.1" 200 ${n % 5000} "-" "bench/1.0" request ${n}`,
});

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
const pct = (cpu: number, wall: number) => `${((cpu / wall) * 100).toFixed(1)}%`;

async function throughput(s: Setup, port: number, count: () => Promise<number>): Promise<void> {
  const id = await addDrain(s, port);
  const base = await count();
  const row = await getDrainRow(s.db, id);
  const start = performance.now();
  let n = 0;
  while (performance.now() - start < SECONDS * 1000) {
    if (s.drains.view(row).buffered < 4 * BATCH_LINES)
      for (let i = 0; i < BATCH_LINES; i++) s.drains.offer(line(s.appIds[n % APPS]!, n % APPS, n++));
    await new Promise((r) => setImmediate(r));
  }
  // Lines still waiting are not counted: the rate is what reached the receiver in the time.
  const wall = (performance.now() - start) / 1000;
  const delivered = (await count()) - base;
  const serial = performance.now();
  let m = 0;
  for (let k = 0; k < delivered; k += BATCH_LINES)
    jsonBatch(Array.from({ length: BATCH_LINES }, () => line(s.appIds[0]!, 0, m++)));
  const serialRate = delivered / ((performance.now() - serial) / 1000);
  const rate = delivered / wall;
  console.log(
    `1. one drain: ${Math.round(rate)} lines/s delivered; baseline (serialising only) ${Math.round(serialRate)} lines/s; ratio ${(rate / serialRate).toFixed(2)}x`,
  );
  await s.drains.stop();
}

/** Paced feeding for `seconds`: `rate` lines/s spread over the apps, every 10 ms. */
async function paced(s: Setup, seconds: number, onTick?: (elapsed: number) => void): Promise<number> {
  const perTick = RATE / 100;
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * RATE);
    while (n < due) {
      for (let i = 0; i < perTick && n < due; i++, n++)
        s.drains.offer(line(s.appIds[n % APPS]!, n % APPS, n));
    }
    onTick?.(performance.now() - start);
    await new Promise((r) => setTimeout(r, 10));
  }
  return n;
}

async function syntheticRate(s: Setup, port: number, count: () => Promise<number>): Promise<void> {
  const id = await addDrain(s, port);
  const base = await count();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const offered = await paced(s, SECONDS);
  await new Promise((r) => setTimeout(r, 1000));
  const wall = performance.now() - t0;
  const cpu = cpuMs(process.cpuUsage(cpu0));
  await s.drains.flushCounts();
  const row = await getDrainRow(s.db, id);
  console.log(
    `2a. ${RATE} lines/s from ${APPS} apps, handed over: ${offered} lines, received ${(await count()) - base}, dropped ${row.dropped}; control plane ${pct(cpu, wall)} of one core, ${((cpu / offered) * 1000).toFixed(2)} ms CPU per 1,000 lines (goal: under 25%)`,
  );
  await s.drains.stop();
}

async function containersRate(s: Setup, port: number, count: () => Promise<number>): Promise<void> {
  if (!(await dockerReachable())) {
    console.log('2b. skipped: no Docker engine answers');
    return;
  }
  await ensureBaseImage();
  const perApp = Math.round(RATE / APPS / 10);
  const made: string[] = [];
  try {
    const names = await s.db.selectFrom('apps').select('name').orderBy('id').execute();
    for (const [i, a] of names.entries()) {
      const c = await s.engine.docker.createContainer({
        Image: BASE_IMAGE,
        name: `${a.name}-web-1`,
        Cmd: [
          'sh',
          '-c',
          `i=0; while :; do j=0; while [ $j -lt ${perApp} ]; do echo "GET /items/$i 200 app ${i} line $i"; i=$((i+1)); j=$((j+1)); done; usleep 100000; done`,
        ],
        Labels: {
          ...ownerLabels(s.engine),
          [LABEL_APP]: a.name,
          [LABEL_SERVICE]: 'web',
          [LABEL_DEPLOYMENT]: 'bench',
          'svc.test': 'bench-drains',
        },
      });
      made.push(c.id);
    }
    const id = await addDrain(s, port);
    await s.drains.start();
    for (const c of made) await s.engine.docker.getContainer(c).start();
    await new Promise((r) => setTimeout(r, 3000));
    await s.drains.flushCounts();
    const base = await count();
    const a0 = s.drains.accepted(id);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    const wall = performance.now() - t0;
    const cpu = cpuMs(process.cpuUsage(cpu0));
    const read = s.drains.accepted(id) - a0;
    await s.drains.flushCounts();
    const row = await getDrainRow(s.db, id);
    console.log(
      `2b. ${APPS} containers (${perApp * 10} lines/s each), through the collector: ${Math.round(read / (wall / 1000))} lines/s read, ${Math.round(((await count()) - base) / (wall / 1000))} lines/s received, dropped ${row.dropped}; control plane ${pct(cpu, wall)} of one core, ${((cpu / Math.max(1, read)) * 1000).toFixed(2)} ms CPU per 1,000 lines (goal: under 25% at 10,000 lines/s)`,
    );
  } finally {
    await s.drains.stop();
    for (const c of made)
      await s.engine.docker
        .getContainer(c)
        .remove({ force: true })
        .catch(() => {});
  }
}

async function deadReceiver(s: Setup): Promise<void> {
  const id = await addDrain(s, await deadPort());
  const gc = (globalThis as { gc?: () => void }).gc;
  const samples: string[] = [];
  let next = 5000;
  await paced(s, DEAD, (elapsed) => {
    if (elapsed < next) return;
    next += 5000;
    gc?.();
    const m = process.memoryUsage();
    samples.push(
      `${Math.round(elapsed / 1000)}s heap ${(m.heapUsed / 1048576).toFixed(1)} MiB rss ${(m.rss / 1048576).toFixed(0)} MiB`,
    );
  });
  await s.drains.flushCounts();
  const row = await getDrainRow(s.db, id);
  const v = s.drains.view(row);
  console.log(
    `3. dead receiver, ${RATE} lines/s for ${DEAD} s: buffered ${v.buffered}, dropped ${row.dropped}${gc ? '' : ' (run with --expose-gc for heap after a GC)'}`,
  );
  for (const x of samples) console.log(`   ${x}`);
  await s.drains.stop();
}

async function main(): Promise<void> {
  console.log(
    `bench:drains on ${availableParallelism()} CPUs, load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  const recv = await startReceiver();
  const dirs: string[] = [];
  try {
    for (const phase of [
      (s: Setup) => throughput(s, recv.port, recv.count),
      (s: Setup) => syntheticRate(s, recv.port, recv.count),
      (s: Setup) => containersRate(s, recv.port, recv.count),
      (s: Setup) => deadReceiver(s),
    ]) {
      const s = await setup(APPS);
      dirs.push(s.dir);
      await phase(s);
      await s.db.destroy();
    }
  } finally {
    recv.child.kill();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

await main();
