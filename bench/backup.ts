// npm run bench:backup [-- --mb 100] — one managed Postgres database (local image) filled with
// --mb MB of table data (half-compressible hex text), then, in the same run:
//   baseline: `pg_dump -Fc -Z0` streamed out of the container through `docker exec` into
//             `gzip -3 > /dev/null` on the host (the same dump and level the pipeline uses);
//   pipeline: POST /api/apps/{id}/backups/{bid}/run -> succeeded (pg_dump, gzip, AES-256-GCM
//             records, sha256, local destination);
//   restore:  POST .../runs/{rid}/restore -> succeeded (authenticate the whole artifact, stop
//             the app's services, pg_restore --clean, start them).
// The control plane is its own process, started the way an operator does (`svc serve`), so its
// RSS is the server's alone, not this harness's: /proc/<pid>/status VmRSS sampled every 100 ms
// during the backup, and the kernel's high-water mark (VmHWM, reset just before the run) for a
// peak between two samples; the kernel updates that mark lazily, so the larger of the two counts.
// No password is hashed during the run: a login's scrypt (128 MiB at the default cost) would be
// a peak of its own, not the backup's.
// `--rounds N` (default 3) alternates the baseline and the pipeline N times and reports each
// round's ratio and their median. The goals: pipeline / baseline <= 1.2; peak RSS under 150 MiB
// whatever the size (streaming); `--mb 1024` is the 1 GB case (several minutes on two shared cores).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { arg } from './_args.js';
import { Client, ADMIN, TEST_MASTER_KEY } from '../tests/_support/server.js';
import { serve, type Served } from '../tests/_support/cli.js';
import { ensureDbImages } from '../tests/_support/dbimages.js';
import { DOCKER_SOCKET } from '../tests/_support/docker.js';
import { ENGINES } from '#lib/databases/engines/index.js';

const MB = arg('--mb', 100);
const ROUNDS = arg('--rounds', 3);
const RATIO_GOAL = 1.2;
const mib = (b: number) => (b / 1024 / 1024).toFixed(1);

async function until<T>(
  what: string,
  fn: () => Promise<T | null>,
  timeoutMs: number,
  everyMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function exec(cmd: string, args: string[], stdout: 'ignore' | 'pipe' = 'pipe'): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', stdout, 'pipe'] });
    let out = '';
    let err = '';
    p.stdout?.on('data', (d) => (out += d));
    p.stderr!.on('data', (d) => (err += d));
    p.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')}: ${code} ${err.slice(-300)}`)),
    );
  });
}

/** `docker exec ... pg_dump` piped into a host `gzip -3 > /dev/null`. */
function baselineDump(container: string, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const dump = spawn(
      'docker',
      ['exec', '-e', `URL=${url}`, container, 'sh', '-c', 'exec pg_dump -Fc -Z0 "$URL"'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const gz = spawn('gzip', ['-3'], { stdio: ['pipe', 'ignore', 'inherit'] });
    dump.stdout.pipe(gz.stdin);
    let codes = 0;
    const done = (code: number | null) => {
      if (code !== 0) reject(new Error(`baseline exited with ${code}`));
      else if (++codes === 2) resolve(performance.now() - t0);
    };
    dump.on('close', done);
    gz.on('close', done);
  });
}

/** Bytes of memory a /proc/<pid>/status field reports (VmRSS, VmHWM). */
async function procKb(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!m) throw new Error(`no ${field} for process ${pid}`);
  return Number(m[1]) * 1024;
}

/** CPU time (user + system) the process has used, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Samples the process's RSS every `everyMs` until stopped; `peak` includes the last sample. */
function sampleRss(pid: number, everyMs: number): { stop(): Promise<{ peak: number; samples: number }> } {
  let peak = 0;
  let samples = 0;
  let pending: Promise<void> = Promise.resolve();
  const take = () =>
    (pending = procKb(pid, 'VmRSS').then(
      (b) => {
        peak = Math.max(peak, b);
        samples++;
      },
      () => undefined,
    ));
  void take();
  const timer = setInterval(() => void take(), everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      await take();
      return { peak, samples };
    },
  };
}

async function adminClient(url: string, dataDir: string): Promise<Client> {
  const c = new Client(url);
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  const s = await c.req('POST', '/api/setup/admin', { token, ...ADMIN });
  if (s.status !== 201) throw new Error(`setup failed: ${s.status} ${s.text}`);
  const r = await c.req('POST', '/api/auth/login', ADMIN);
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
  return c;
}

/** Whatever the engine still holds for the app once the API delete ran (or could not). */
async function removeLeftovers(appName: string): Promise<void> {
  const docker = new Docker({ socketPath: DOCKER_SOCKET });
  for (const label of [`svc.app=${appName}`, `svc.database.app=${appName}`]) {
    for (const c of await docker.listContainers({ all: true, filters: { label: [label] } })) {
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined);
    }
  }
  for (const n of await docker.listNetworks({ filters: { label: [`svc.app=${appName}`] } })) {
    await docker
      .getNetwork(n.Id)
      .remove()
      .catch(() => undefined);
  }
  for (const v of (await docker.listVolumes({ filters: { label: [`svc.app=${appName}`] } })).Volumes ?? []) {
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  }
}

async function stopServer(svc: Served): Promise<void> {
  if (svc.proc.exitCode !== null || svc.proc.signalCode !== null) return;
  svc.proc.kill('SIGTERM');
  const timer = setTimeout(() => svc.proc.kill('SIGKILL'), 15_000);
  await svc.exited;
  clearTimeout(timer);
}

interface Round {
  baseMs: number;
  runMs: number;
  run: { id: string; size_bytes: number };
  /** The control plane's CPU time during the run (all its threads: gzip's included). */
  cpu: number;
  rssBefore: number;
  peak: number;
  samples: number;
  hwm: number | null;
}

/** One run of the backup through the API, timed, with the server's RSS before and at its peak. */
async function timeBackup(
  c: Client,
  appId: string,
  backupId: string,
  pid: number,
): Promise<Omit<Round, 'baseMs'>> {
  const rssBefore = await procKb(pid, 'VmRSS');
  // 5 resets the peak RSS the kernel keeps for the process (proc(5), clear_refs).
  const hwmReset = await writeFile(`/proc/${pid}/clear_refs`, '5').then(
    () => true,
    () => false,
  );
  const sampler = sampleRss(pid, 100);
  const cpu0 = await cpuSeconds(pid);
  const t0 = performance.now();
  const started = await c.req('POST', `/api/apps/${appId}/backups/${backupId}/run`);
  if (started.status !== 202) throw new Error(started.text);
  const run = await until(
    'backup',
    async () => {
      const x = (await c.req('GET', `/api/apps/${appId}/backups/runs/${started.body.run.id}`)).body.run;
      return x.status === 'running' ? null : x;
    },
    600_000,
    20,
  );
  const runMs = performance.now() - t0;
  const cpu = (await cpuSeconds(pid)) - cpu0;
  const { peak: sampled, samples } = await sampler.stop();
  const hwm = hwmReset ? await procKb(pid, 'VmHWM') : null;
  if (run.status !== 'succeeded') throw new Error(`backup ${run.status}: ${run.error}`);
  return { runMs, run, cpu, rssBefore, peak: Math.max(sampled, hwm ?? 0), samples, hwm };
}

async function timeRestore(c: Client, appId: string, runId: string): Promise<number> {
  await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  const r0 = performance.now();
  const rs = await c.req('POST', `/api/apps/${appId}/backups/runs/${runId}/restore`);
  if (rs.status !== 202) throw new Error(rs.text);
  const restored = await until(
    'restore',
    async () => {
      const x = (await c.req('GET', `/api/apps/${appId}/backups/restores/${rs.body.restore.id}`)).body
        .restore;
      return x.status === 'running' ? null : x;
    },
    600_000,
  );
  if (restored.status !== 'succeeded') throw new Error(`restore failed: ${restored.error}`);
  return performance.now() - r0;
}

function report(size: number, pid: number, rounds: Round[], restoreMs: number): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ratios = rounds.map((r) => r.runMs / r.baseMs);
  const last = rounds.at(-1)!;
  const peak = rounds.reduce((a, r) => (r.peak > a.peak ? r : a));
  const s = (ms: number) => (ms / 1000).toFixed(2);
  console.log(
    `database ${mib(size)} MiB, artifact ${mib(last.run.size_bytes)} MiB, ${rounds.length} alternating rounds`,
  );
  rounds.forEach((r, i) =>
    console.log(
      `round ${i + 1}: baseline pg_dump | gzip -3 > /dev/null ${s(r.baseMs)} s, pipeline backup run ${s(r.runMs)} s: ${ratios[i]!.toFixed(2)}x; control plane CPU ${r.cpu.toFixed(2)} s`,
    ),
  );
  console.log(
    `pipeline / baseline, median of the rounds: ${median(ratios).toFixed(2)}x (goal <= ${RATIO_GOAL}x)`,
  );
  console.log(`control plane (svc serve, pid ${pid}) RSS before the runs : ${mib(rounds[0]!.rssBefore)} MiB`);
  console.log(
    `control plane RSS peak during a run : ${mib(peak.peak)} MiB (goal < 150 MiB), growth ${mib(peak.peak - peak.rssBefore)} MiB = ${((peak.peak - peak.rssBefore) / size).toFixed(3)} of the database; ` +
      `kernel high-water mark ${peak.hwm === null ? 'unavailable' : `${mib(peak.hwm)} MiB`}`,
  );
  console.log(
    `restore (authenticate + pg_restore)  : ${s(restoreMs)} s  ratio to the last baseline dump ${(restoreMs / last.baseMs).toFixed(2)}x`,
  );
}

/** The app's managed PostgreSQL database, ready, with its container and URL. */
async function makeDatabase(c: Client, appId: string, name: string) {
  const d = await c.req('POST', `/api/apps/${appId}/databases`, { engine: 'postgres' });
  if (d.status !== 202) throw new Error(d.text);
  const db = await until(
    'postgres ready',
    async () => {
      const x = (await c.req('GET', `/api/apps/${appId}/databases`)).body.items[0];
      if (x.status === 'error') throw new Error(x.error);
      return x.status === 'ready' ? x : null;
    },
    300_000,
    500,
  );
  // Revealing a secret needs a recent step-up.
  await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  const revealed = await c.req('GET', `/api/apps/${appId}/env/DATABASE_URL/reveal`);
  if (revealed.status !== 200) throw new Error(`reveal DATABASE_URL: ${revealed.status} ${revealed.text}`);
  return { db, container: `svc-${name}-db-${db.id.slice(-8)}`, url: revealed.body.value as string };
}

/** Fills the database with --mb MB of table data; answers its size in bytes. */
async function fill(container: string, url: string): Promise<number> {
  const psql = (sql: string) =>
    exec('docker', [
      'exec',
      '-e',
      `URL=${url}`,
      container,
      'sh',
      '-c',
      'exec psql "$URL" -v ON_ERROR_STOP=1 -At -c "$0"',
      sql,
    ]);
  // ~100 bytes of row per 64 hex characters plus overhead; filled in batches to keep memory flat.
  const rows = Math.ceil((MB * 1024 * 1024) / 100);
  const batch = 500_000;
  process.stdout.write(`filling ${MB} MB (${rows} rows)... `);
  const f0 = performance.now();
  await psql('CREATE TABLE bench (id bigint primary key, body text)');
  for (let from = 1; from <= rows; from += batch) {
    await psql(
      `INSERT INTO bench SELECT g, md5(g::text) || md5((g * 7)::text) FROM generate_series(${from}, ${Math.min(rows, from + batch - 1)}) g`,
    );
  }
  const size = Number(await psql('SELECT pg_database_size(current_database())'));
  console.log(`${((performance.now() - f0) / 1000).toFixed(1)} s; database size ${mib(size)} MiB`);
  return size;
}

async function main(): Promise<void> {
  const images = await ensureDbImages();
  const map: Record<string, string> = {};
  for (const ref of Object.values(ENGINES.postgres.spec.images)) map[ref] = images.postgres;
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  const name = `bb-${Math.random().toString(36).slice(2, 8)}`;
  let svc: Served | null = null;
  let c: Client | null = null;
  let appId: string | null = null;
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      if (svc && c && appId) {
        const up = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password }).catch(() => null);
        const del =
          up?.status === 200
            ? await c
                .req('DELETE', `/api/apps/${appId}?volumes=true`)
                .catch((e) => ({ status: 0, text: String(e) }))
            : null;
        if (del && del.status !== 200)
          console.error(`cleanup: DELETE app answered ${del.status} ${del.text.slice(0, 300)}`);
      }
      if (svc) await stopServer(svc);
      await removeLeftovers(name).catch((e) => console.error('cleanup', e));
      await rm(dataDir, { recursive: true, force: true });
    })());
  // The server is not our process group's child in every shell: never leave it running.
  process.once('exit', () => svc?.proc.kill('SIGKILL'));
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`${sig}: cleaning up`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  try {
    svc = await serve({
      SVC_DATA_DIR: dataDir,
      SVC_MASTER_KEY: TEST_MASTER_KEY,
      // The default password cost (scrypt at 128 MiB) as in production: hashes of a lower cost
      // (16 MiB at 14) stay resident in glibc's per-thread arenas after the setup and login, which
      // made the server's RSS before the run 20-50 MiB larger than a production server's.
      SVC_ACCESS_LOG: join(dataDir, 'access.log'),
      SVC_SECURITY_DIR: join(dataDir, 'security'),
      // No Caddy in this benchmark.
      SVC_PROXY: 'off',
      SVC_IMAGE_MAP: JSON.stringify(map),
    });
    const pid = svc.proc.pid!;
    c = await adminClient(svc.url, dataDir);
    const a = await c.req('POST', '/api/apps', {
      name,
      source: { type: 'image', image: 'svc-test/busybox:latest' },
    });
    if (a.status !== 201) throw new Error(a.text);
    appId = a.body.app.id as string;
    const { db, container, url } = await makeDatabase(c, appId, name);
    const size = await fill(container, url);

    const cfg = await c.req('POST', `/api/apps/${appId}/backups`, {
      source: { type: 'database', database_id: db.id },
      schedule: '0 3 * * *',
      keep_last: 1,
    });
    if (cfg.status !== 201) throw new Error(cfg.text);
    const rounds: Round[] = [];
    // Alternating, so that both sides of each round's ratio ran under the same load.
    for (let i = 0; i < ROUNDS; i++) {
      const baseMs = await baselineDump(container, url);
      const backup = await timeBackup(c, appId, cfg.body.backup.id as string, pid);
      rounds.push({ baseMs, ...backup });
    }
    const restoreMs = await timeRestore(c, appId, rounds.at(-1)!.run.id as string);
    report(size, pid, rounds, restoreMs);
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
