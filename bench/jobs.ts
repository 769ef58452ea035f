// npm run bench:jobs  [-- --apps 50 --minutes 5]
//
// Real components: the control plane as its own process (`node dist/runtime/cli.js serve`), dockerd,
// busybox apps. `--apps` apps, each with one job every minute (`echo tick`), for `--minutes` due
// times. Prints, over every due run: the start lag (from the due time to its container started:
// p50, p95, max; goal: p95 under 2 s), how many were missed and how many ran twice (goal: none), and
// the control plane's CPU while idle between runs (from 25 s to 43 s past each minute: after the
// runs, before the next ones are made ahead of their due time). Baselines measured in the same run:
// the engine alone starting as many containers at once (created beforehand, as the scheduler makes
// them), and the control plane's idle CPU before any job exists.
import { type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveOn } from '../tests/_support/cli.js';
import { ensureBaseImage, BASE_IMAGE, DOCKER_SOCKET } from '../tests/_support/docker.js';
import { adminClient, ADMIN, type Client, type TestServer } from '../tests/_support/server.js';
import { freePort } from '../tests/_support/net.js';
import { cleanupApp, waitStatus } from '../tests/engine/_deploy.js';
import { arg } from './_args.js';

const MINUTE = 60_000;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const serve = (dataDir: string, port: number) =>
  serveOn(dataDir, port, { SVC_AUTH_RATE_LIMIT: '100000', SVC_PROXY: 'off', SVC_SECURITY_MONITOR: 'false' });

/** CPU seconds (user + system) the process used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Percent of one core the process used over `ms` from now. */
async function cpuOver(pid: number, ms: number): Promise<number> {
  const a = await cpuSeconds(pid);
  const t = Date.now();
  await new Promise((r) => setTimeout(r, ms));
  return (((await cpuSeconds(pid)) - a) / ((Date.now() - t) / 1000)) * 100;
}

/**
 * The engine alone: `n` containers created beforehand on a network of their own, then all started at
 * once; each one's milliseconds from the common start until its start returned (sorted).
 */
async function engineStarts(n: number): Promise<number[]> {
  const { default: Docker } = await import('dockerode');
  const docker = new Docker({ socketPath: DOCKER_SOCKET });
  const net = `svc-bench-jobs-${process.pid}`;
  await docker.createNetwork({ Name: net, Labels: { 'svc.bench': 'jobs' } });
  const made = [];
  try {
    for (let i = 0; i < n; i++)
      made.push(
        await docker.createContainer({
          Image: BASE_IMAGE,
          Cmd: ['echo', 'tick'],
          Labels: { 'svc.bench': 'jobs' },
          HostConfig: { NetworkMode: net },
        }),
      );
    const t = Date.now();
    const ms = await Promise.all(made.map(async (c) => (await c.start(), Date.now() - t)));
    return ms.sort((a, b) => a - b);
  } finally {
    for (const c of made) await c.remove({ force: true }).catch(() => {});
    await docker
      .getNetwork(net)
      .remove()
      .catch(() => {});
  }
}

async function makeApps(c: Client, n: number, names: string[]): Promise<string[]> {
  const compose = `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]\n`;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `bench-jobs-${process.pid}-${i}`;
    names.push(name);
    const r = await c.req('POST', '/api/apps', { name, source: { type: 'compose', compose } });
    if (r.status !== 201) throw new Error(`app: ${r.status} ${r.text}`);
    ids.push(r.body.app.id);
  }
  const deps: Array<[string, string]> = [];
  for (const id of ids) {
    const d = await c.req('POST', `/api/apps/${id}/deployments`, {});
    if (d.status !== 202) throw new Error(`deploy: ${d.status} ${d.text}`);
    deps.push([id, d.body.deployment.id]);
  }
  for (const [id, did] of deps) await waitStatus(c, id, did, ['succeeded'], 600_000);
  return ids;
}

interface Outcome {
  lags: number[];
  missed: number;
  doubled: number;
  failed: number;
}

async function outcome(c: Client, jobs: Array<[string, string]>, due: number[]): Promise<Outcome> {
  const out: Outcome = { lags: [], missed: 0, doubled: 0, failed: 0 };
  const wanted = new Set(due.map((t) => new Date(t).toISOString()));
  for (const [appId, jid] of jobs) {
    const items = (await c.req('GET', `/api/apps/${appId}/jobs/${jid}/runs?limit=200`)).body.items as any[];
    const mine = items.filter((r) => r.trigger === 'schedule' && wanted.has(r.scheduled_for));
    const seen = new Map<string, number>();
    for (const r of mine) seen.set(r.scheduled_for, (seen.get(r.scheduled_for) ?? 0) + 1);
    out.doubled += [...seen.values()].filter((v) => v > 1).length;
    for (const t of wanted) {
      const r = mine.find((x) => x.scheduled_for === t);
      if (!r || !r.started_at) out.missed++;
      else {
        out.lags.push(Date.parse(r.started_at) - Date.parse(r.scheduled_for));
        if (r.status !== 'succeeded') out.failed++;
      }
    }
  }
  return out;
}

async function main(): Promise<void> {
  const appsN = arg('--apps', 50);
  const minutes = arg('--minutes', 5);
  await ensureBaseImage();
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-jobs-'));
  const names: string[] = [];
  let srv: { url: string; proc: ChildProcess } | null = null;
  try {
    srv = await serve(dataDir, await freePort());
    const pid = srv.proc.pid!;
    const c = await adminClient({ url: srv.url, dataDir } as TestServer);
    await c.req('PUT', '/api/instance/deploy-concurrency', { concurrency: 8 });
    console.log(`deploying ${appsN} apps (busybox, one service each)...`);
    const ids = await makeApps(c, appsN, names);
    const idleBefore = await cpuOver(pid, 18_000);
    const floor = await engineStarts(appsN);
    const jobs: Array<[string, string]> = [];
    for (const id of ids) {
      const r = await c.req('POST', `/api/apps/${id}/jobs`, {
        name: 'tick',
        schedule: '* * * * *',
        command: ['sh', '-c', 'echo tick'],
      });
      if (r.status !== 201) throw new Error(`job: ${r.status} ${r.text}`);
      jobs.push([id, r.body.job.id]);
    }
    const first = Math.ceil((Date.now() + 10_000) / MINUTE) * MINUTE;
    const due = Array.from({ length: minutes }, (_, i) => first + i * MINUTE);
    console.log(
      `${appsN} jobs every minute; measuring the due times ${new Date(first).toISOString()} and ${minutes - 1} more`,
    );
    const idle: number[] = [];
    for (const t of due) {
      await new Promise((r) => setTimeout(r, t + 25_000 - Date.now()));
      idle.push(await cpuOver(pid, 18_000));
    }
    await new Promise((r) => setTimeout(r, Math.max(0, due.at(-1)! + 55_000 - Date.now())));
    const o = await outcome(c, jobs, due);
    const lags = o.lags.sort((a, b) => a - b);
    const idleAvg = idle.reduce((a, b) => a + b, 0) / idle.length;
    console.log(
      `due runs: ${appsN * minutes} expected, ${lags.length} started, ${o.missed} missed, ${o.doubled} doubled, ${o.failed} not succeeded`,
    );
    console.log(
      `start lag (due time -> container started): p50 ${pct(lags, 50)} ms, p95 ${pct(lags, 95)} ms, max ${lags.at(-1)} ms (goal: p95 < 2000 ms)`,
    );
    console.log(
      `baseline, the engine alone starting ${appsN} created containers at once: p50 ${pct(floor, 50)} ms, p95 ${pct(floor, 95)} ms, max ${floor.at(-1)} ms; lag p95 / engine p95 = ${(pct(lags, 95) / pct(floor, 95)).toFixed(2)}`,
    );
    console.log(
      `control plane CPU while idle between runs (25-43 s past each minute): ${idle.map((x) => x.toFixed(2)).join(', ')} % of a core (mean ${idleAvg.toFixed(2)} %); before any job: ${idleBefore.toFixed(2)} %; ratio ${(idleAvg / Math.max(idleBefore, 0.01)).toFixed(2)}`,
    );
    // Cleanup through the API (a step-up first), then whatever is left by label.
    await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
    for (const [id] of jobs) await c.req('DELETE', `/api/apps/${id}?volumes=true`);
  } finally {
    srv?.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 2000));
    srv?.proc.kill('SIGKILL');
    const { createEngine } = await import('#lib/docker/index.js');
    const engine = createEngine({ socketPath: DOCKER_SOCKET });
    for (const n of names) await cleanupApp(engine, n);
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
