// npm run bench:wake  [-- --wakes 20]
//
// Real components: Caddy (its own process, admin API only), Pebble issuing the certificate,
// challtestsrv as DNS, the control plane with its API, a busybox web app on dockerd.
// The app gets `sleep_after_minutes`; each round puts it to sleep through the idle check (handed a
// later clock: the stop is real), then times one GET through Caddy from the moment it is sent until
// the app's own answer is read (the wake: start, gate, route switch, the held request forwarded).
// Prints p50, p95 and max over `--wakes` rounds (goal: p95 under 2 s), and the memory the sleeping
// app frees (its container's memory just before it stopped, as the `sleeping` event reports it).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startEdgeLab, type EdgeLab } from '../tests/_support/edge.js';
import { ensureBaseImage, BASE_IMAGE } from '../tests/_support/docker.js';
import { startTestServer, adminClient, type TestServer, type Client } from '../tests/_support/server.js';
import { waitStatus, cleanupApp } from '../tests/engine/_deploy.js';
import { poll } from '../tests/_support/wait.js';
import { listAppContainers } from '#lib/docker/index.js';
import { arg } from './_args.js';

const run = promisify(execFile);
const IMAGE = `svc-bench/wake-web:${process.pid}`;
const BASE = 'wake.bench.test';

async function deploy(c: Client, appId: string): Promise<void> {
  const d = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  if (d.status !== 202) throw new Error(`deploy: ${d.status} ${d.text}`);
  await waitStatus(c, appId, d.body.deployment.id, ['succeeded']);
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const wakes = arg('--wakes', 20);
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
        'printf "%s\\n" "$1" | docker build -q --network none --label svc.bench=wake -t "$2" -',
        'sh',
        dockerfile,
        IMAGE,
      ],
      { timeout: 120_000 },
    );
    lab = await startEdgeLab();
    server = await startTestServer(
      { ...lab.vars, SVC_BASE_DOMAIN: BASE },
      { edge: { checkIntervalMs: 2000, checkerTickMs: 500 }, sleep: { intervalMs: 3_600_000 } },
    );
    const c = await adminClient(server);
    appName = `bench-wake-${process.pid}`;
    const app = (await c.req('POST', '/api/apps', { name: appName, source: { type: 'image', image: IMAGE } }))
      .body.app;
    await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080 });
    await deploy(c, app.id);
    const host = `${appName}.${BASE}`;
    await poll('the app over HTTPS', async () => (await lab!.https(host)).status === 200, 120_000, 250);
    const set = await c.req('PATCH', `/api/apps/${app.id}`, { sleep_after_minutes: 1 });
    if (set.status !== 200) throw new Error(`setting: ${set.status} ${set.text}`);
    const memory: number[] = [];
    await server.env.bus.subscribe('apps', (e) => {
      const d = e.data as { type?: string; app_id?: string; memory_bytes?: number | null };
      if (d.type === 'sleeping' && d.app_id === app.id && typeof d.memory_bytes === 'number')
        memory.push(d.memory_bytes);
    });
    console.log(
      `app ${appName} (busybox httpd), host ${host} over HTTPS with a Pebble certificate; ${wakes} wakes`,
    );

    const times: number[] = [];
    for (let i = 0; i < wakes; i++) {
      const slept = await server.env.sleeper.check(Date.now() + 2 * 60_000);
      if (!slept.includes(app.id)) throw new Error(`round ${i}: the app did not go to sleep`);
      const running = (await listAppContainers(server.env.engine, appName)).filter(
        (x) => x.state === 'running',
      );
      if (running.length) throw new Error(`round ${i}: containers still run while asleep`);
      const t0 = performance.now();
      const r = await lab.https(host, '/');
      const ms = performance.now() - t0;
      const ids = (await listAppContainers(server.env.engine, appName))
        .filter((x) => x.state === 'running')
        .map((x) => x.id.slice(0, 12));
      if (r.status !== 200 || !ids.includes(r.body.trim()))
        throw new Error(`round ${i}: answered ${r.status} ${r.body.slice(0, 200)}`);
      times.push(ms);
    }
    const sorted = [...times].sort((a, b) => a - b);
    const mib = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MiB`;
    console.log(
      `wake (first request -> the app's answer, through Caddy): p50 ${pct(sorted, 50).toFixed(0)} ms, p95 ${pct(sorted, 95).toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms over ${wakes} wakes (goal p95 < 2000 ms)`,
    );
    if (memory.length) {
      const m = [...memory].sort((a, b) => a - b);
      console.log(
        `memory freed per sleeping app (its container's memory before sleeping): median ${mib(pct(m, 50))}, min ${mib(m[0]!)}, max ${mib(m.at(-1)!)}`,
      );
    } else console.log('memory freed per sleeping app: unknown (the engine gave no stats)');
  } finally {
    if (server && appName) await cleanupApp(server.env.engine, appName);
    await server?.stop();
    await lab?.stop();
    await run('docker', ['image', 'rm', '-f', IMAGE]).catch(() => {});
  }
}

await main();
