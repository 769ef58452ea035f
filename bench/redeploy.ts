// The product's own overhead of redeploying an image app with a health path, for bench:deploy.
// Real components: Caddy (admin API only), Pebble, the control plane with its API, dockerd.
// - API: POST /api/apps/{id}/deployments, then HTTPS requests through Caddy every 10 ms until the
//   new container answers (each container serves its own hostname);
// - baseline, in the same run: the same image started through the same engine API (create,
//   start) on a network of its own, then GET of the health path every 10 ms until it answers:
//   the container's start and the health probe's first success.
// The overhead is the difference of the medians; goal < 500 ms. Each API round is also cut into
// its steps from the deployment log's timestamps (a profile of where the time goes).
import { loadavg } from 'node:os';
import type Docker from 'dockerode';
import { startEdgeLab, type EdgeLab } from '../tests/_support/edge.js';
import { BASE_IMAGE } from '../tests/_support/docker.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestServer, adminClient, type TestServer, type Client } from '../tests/_support/server.js';
import { waitStatus, cleanupApp } from '../tests/engine/_deploy.js';
import { poll } from '../tests/_support/wait.js';
import { listAppContainers } from '#lib/docker/index.js';

const GOAL_MS = 500;
const BASE = 'redeploy.test';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Steps of a round, from the deployment log: the line that ends each step. */
const STEPS: Array<[string, RegExp]> = [
  ['API call to the worker starting', /^deployment .* started/],
  ['to the container created', /: created /],
  ['to the container started', /: started /],
  ['to the health probe answered', /is ready \(/],
  ['to the switch taken by Caddy', /proxy: routes switched/],
];

interface Round {
  total: number;
  steps: number[];
  caddyWait: number;
}

async function oneRound(lab: EdgeLab, c: Client, appId: string, host: string): Promise<Round> {
  const old = (await lab.https(host)).body.trim();
  const t0 = Date.now();
  const d = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  if (d.status !== 202) throw new Error(`deploy: ${d.status} ${d.text}`);
  for (;;) {
    const r = await lab.https(host).catch(() => null);
    if (r && r.status === 200 && r.body.trim() !== old) break;
    if (Date.now() - t0 > 120_000) throw new Error('the new version never answered');
    await sleep(10);
  }
  const total = Date.now() - t0;
  await waitStatus(c, appId, d.body.deployment.id, ['succeeded']);
  const lines = (await c.req('GET', `/api/apps/${appId}/deployments/${d.body.deployment.id}/logs`)).body
    .items as Array<{ at: string; line: string }>;
  let prev = t0;
  const steps = STEPS.map(([, re]) => {
    const at = Date.parse(lines.find((l) => re.test(l.line))?.at ?? '') || prev;
    const ms = at - prev;
    prev = at;
    return ms;
  });
  steps.push(t0 + total - prev);
  const waited = /after (\d+) ms/.exec(lines.find((l) => /proxy: routes switched/.test(l.line))?.line ?? '');
  return { total, steps, caddyWait: Number(waited?.[1] ?? NaN) };
}

/** The same image through the same engine API, until its health path answers. */
async function baseline(docker: Docker, image: string, net: string): Promise<number> {
  const t0 = Date.now();
  const ct = await docker.createContainer({
    Image: image,
    Labels: { 'svc.bench': 'redeploy' },
    HostConfig: { NetworkMode: net },
  });
  try {
    await ct.start();
    const ip = (await ct.inspect()).NetworkSettings.Networks[net]!.IPAddress;
    for (;;) {
      const ok = await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return Date.now() - t0;
      if (Date.now() - t0 > 60_000) throw new Error('the baseline container never answered');
      await sleep(10);
    }
  } finally {
    await ct.remove({ force: true });
  }
}

/** Serves its container's hostname at / (so a client tells the versions apart), as `tag`. */
export async function buildRedeployImage(tag: string): Promise<void> {
  const dockerfile = [
    `FROM ${BASE_IMAGE}`,
    'EXPOSE 8080',
    `CMD ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www; hostname > /www/index.html; httpd -f -p 8080 -h /www & wait"]`,
  ].join('\n');
  await promisify(execFile)(
    'sh',
    [
      '-c',
      'printf "%s\\n" "$1" | docker build -q --network none --label svc.bench=redeploy -t "$2" -',
      'sh',
      dockerfile,
      tag,
    ],
    { timeout: 120_000 },
  );
}

function report(api: Round[], base: number[], load0: number): boolean {
  const b = median(base);
  const totals = api.map((r) => r.total);
  const q = median(totals);
  const overhead = q - b;
  const mid = api.find((r) => r.total === q)!;
  console.log(`image app redeploy with a health path (${api.length} rounds, medians)`);
  console.log(`  container start + first health answer (engine API): ${b} ms   (rounds: ${base.join(', ')})`);
  console.log(
    `  API call to the new version answering through Caddy: ${q} ms   (rounds: ${totals.join(', ')})`,
  );
  console.log(
    `  the product's own overhead: ${overhead} ms; goal < ${GOAL_MS} ms: ${overhead < GOAL_MS ? 'met' : 'NOT met'}`,
  );
  console.log(`  profile of the median round (from the deployment log's timestamps, ms):`);
  STEPS.forEach(([what], i) => console.log(`    ${what.padEnd(36)} ${mid.steps[i]}`));
  console.log(`    ${'to an answer through Caddy'.padEnd(36)} ${mid.steps[STEPS.length]}`);
  console.log(
    `    (of which waiting for Caddy to take the new answer: ${mid.caddyWait} ms; per round: ${api.map((r) => r.caddyWait).join(', ')})`,
  );
  console.log(
    `  machine load (1-minute average): ${load0.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end`,
  );
  return overhead < GOAL_MS;
}

/** Runs `rounds` of each, prints the figures; true when the goal is met. */
export async function redeployOverhead(image: string, rounds: number): Promise<boolean> {
  let lab: EdgeLab | null = null;
  let server: TestServer | null = null;
  const name = `bench-redeploy-${process.pid}`;
  const net = `svc-benchredeploy-${process.pid}`;
  let docker: Docker | null = null;
  try {
    lab = await startEdgeLab();
    server = await startTestServer(
      { ...lab.vars, SVC_BASE_DOMAIN: BASE },
      { edge: { checkIntervalMs: 2000, checkerTickMs: 500 } },
    );
    docker = server.env.engine.docker;
    await docker.createNetwork({ Name: net, Labels: { 'svc.bench': 'redeploy' } });
    const c = await adminClient(server);
    const app = (await c.req('POST', '/api/apps', { name, source: { type: 'image', image } })).body.app;
    await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/', drain_s: 0 });
    const first = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
    await waitStatus(c, app.id, first.body.deployment.id, ['succeeded']);
    const host = `${name}.${BASE}`;
    await poll(
      'the app over HTTPS',
      async () => (await lab!.https(host).catch(() => null))?.status === 200,
      120_000,
      250,
    );
    const load0 = loadavg()[0]!;
    const api: Round[] = [];
    const base: number[] = [];
    for (let i = 0; i < rounds; i++) {
      api.push(await oneRound(lab, c, app.id, host));
      // The previous container is gone before the next round (drain_s 0).
      await poll(
        'one container',
        async () => ((await listAppContainers(server!.env.engine, name)).length === 1 ? true : null),
        60_000,
        100,
      );
      base.push(await baseline(docker, image, net));
    }
    return report(api, base, load0);
  } finally {
    if (server) await cleanupApp(server.env.engine, name);
    await docker
      ?.getNetwork(net)
      .remove()
      .catch(() => {});
    await server?.stop();
    await lab?.stop();
  }
}
