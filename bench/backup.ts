// npm run bench:backup [-- --mb 100] — one managed Postgres database (local image) filled with
// --mb MB of table data (half-compressible hex text), then, in the same run:
//   baseline: `pg_dump -Fc -Z0` streamed out of the container through `docker exec` into
//             `gzip -3 > /dev/null` on the host (the same dump and level the pipeline uses);
//   pipeline: POST /api/apps/{id}/backups/{bid}/run -> succeeded (pg_dump, gzip, AES-256-GCM
//             records, sha256, local destination), with the control plane's peak RSS sampled
//             every 50 ms (the server runs in this process);
//   restore:  POST .../runs/{rid}/restore -> succeeded (authenticate the whole artifact, stop
//             the app's services, pg_restore --clean, start them).
// The goals: pipeline / baseline <= 1.3; peak RSS under 150 MB whatever the size
// (streaming); `--mb 1024` is the 1 GB case (several minutes on two shared cores).
import { spawn } from 'node:child_process';
import { arg } from './_args.js';
import { startTestServer, adminClient, ADMIN, type Client } from '../tests/_support/server.js';
import { ensureDbImages } from '../tests/_support/dbimages.js';
import { CATALOG } from '../lib/databases/catalog.js';
import { deleteApp } from '../lib/apps/ops.js';
import { settleJobs } from '../lib/backups/run.js';

const MB = arg('--mb', 100);
const mib = (b: number) => (b / 1024 / 1024).toFixed(1);

async function until<T>(what: string, fn: () => Promise<T | null>, timeoutMs: number, everyMs = 50): Promise<T> {
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
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')}: ${code} ${err.slice(-300)}`))));
  });
}

/** `docker exec ... pg_dump` piped into a host `gzip -3 > /dev/null`. */
function baselineDump(container: string, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const dump = spawn('docker', ['exec', '-e', `URL=${url}`, container, 'sh', '-c', 'exec pg_dump -Fc -Z0 "$URL"'], { stdio: ['ignore', 'pipe', 'inherit'] });
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

async function main(): Promise<void> {
  const images = await ensureDbImages();
  const map: Record<string, string> = {};
  for (const ref of Object.values(CATALOG.postgres.images)) map[ref] = images.postgres;
  const s = await startTestServer({ SVC_IMAGE_MAP: JSON.stringify(map) });
  const c: Client = await adminClient(s);
  let appId: string | null = null;
  try {
    const name = `bb-${Math.random().toString(36).slice(2, 8)}`;
    const a = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: 'svc-test/busybox:latest' } });
    appId = a.body.app.id as string;
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
    const container = `svc-${name}-db-${db.id.slice(-8)}`;
    const url = (await c.req('GET', `/api/apps/${appId}/env/DATABASE_URL/reveal`)).body.value as string;
    const psql = (sql: string) => exec('docker', ['exec', '-e', `URL=${url}`, container, 'sh', '-c', 'exec psql "$URL" -v ON_ERROR_STOP=1 -At -c "$0"', sql]);
    // ~100 bytes of row per 64 hex characters plus overhead; filled in batches to keep memory flat.
    const rows = Math.ceil((MB * 1024 * 1024) / 100);
    const batch = 500_000;
    process.stdout.write(`filling ${MB} MB (${rows} rows)... `);
    const f0 = performance.now();
    await psql('CREATE TABLE bench (id bigint primary key, body text)');
    for (let from = 1; from <= rows; from += batch) {
      await psql(`INSERT INTO bench SELECT g, md5(g::text) || md5((g * 7)::text) FROM generate_series(${from}, ${Math.min(rows, from + batch - 1)}) g`);
    }
    const size = Number(await psql('SELECT pg_database_size(current_database())'));
    console.log(`${((performance.now() - f0) / 1000).toFixed(1)} s; database size ${mib(size)} MiB`);

    const baseMs = await baselineDump(container, url);

    const cfg = await c.req('POST', `/api/apps/${appId}/backups`, { source: { type: 'database', database_id: db.id }, schedule: '0 3 * * *', keep_last: 1 });
    if (cfg.status !== 201) throw new Error(cfg.text);
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const t0 = performance.now();
    const started = await c.req('POST', `/api/apps/${appId}/backups/${cfg.body.backup.id}/run`);
    const run = await until(
      'backup',
      async () => {
        const x = (await c.req('GET', `/api/apps/${appId}/backups/runs/${started.body.run.id}`)).body.run;
        return x.status === 'running' ? null : x;
      },
      600_000,
    );
    const runMs = performance.now() - t0;
    clearInterval(sampler);
    if (run.status !== 'succeeded') throw new Error(`backup ${run.status}: ${run.error}`);

    await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
    const r0 = performance.now();
    const rs = await c.req('POST', `/api/apps/${appId}/backups/runs/${run.id}/restore`);
    const restored = await until(
      'restore',
      async () => {
        const x = (await c.req('GET', `/api/apps/${appId}/backups/restores/${rs.body.restore.id}`)).body.restore;
        return x.status === 'running' ? null : x;
      },
      600_000,
    );
    const restoreMs = performance.now() - r0;
    if (restored.status !== 'succeeded') throw new Error(`restore failed: ${restored.error}`);

    console.log(`database ${mib(size)} MiB, artifact ${mib(run.size_bytes)} MiB`);
    console.log(`baseline pg_dump | gzip -3 > /dev/null : ${(baseMs / 1000).toFixed(2)} s`);
    console.log(`pipeline backup run                  : ${(runMs / 1000).toFixed(2)} s  ratio ${(runMs / baseMs).toFixed(2)}x (goal <= 1.3x)`);
    console.log(
      `control plane RSS before / peak      : ${mib(rssBefore)} / ${mib(peak)} MiB, growth ${mib(peak - rssBefore)} MiB = ${((peak - rssBefore) / size).toFixed(3)} of the database (goal: peak < 150 MiB; "before" includes this harness)`,
    );
    console.log(`restore (authenticate + pg_restore)  : ${(restoreMs / 1000).toFixed(2)} s  ratio to baseline dump ${(restoreMs / baseMs).toFixed(2)}x`);
  } finally {
    await settleJobs();
    if (appId) await deleteApp(s.env, appId, { volumes: true }).catch((e) => console.error('cleanup', e));
    await s.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
