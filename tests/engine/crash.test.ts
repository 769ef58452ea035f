// Crash detection from the engine's event stream: a real container that exits in a loop (restart
// policy) and one killed by a memory limit each give one app_crashed per episode, with the exit
// code, the OOM flag and the last log lines, and the app's status says crash_loop / oom. A
// container stopped on purpose is not a crash.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { poll } from '../_support/wait.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_SERVICE } from '#lib/docker/names.js';
import { ownerLabels } from '#lib/docker/owner.js';
import type { BusEvent } from '#lib/events/bus.js';

let s: TestServer | undefined;
let c: Client;
const crashes: BusEvent[] = [];
const deaths: { app: string; container: string }[] = [];
const created: string[] = [];
const suffix = `${process.pid}`;

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
  s.env.bus.onAny((e) => {
    if ((e.data as any)?.type === 'app_crashed') crashes.push(e);
    if ((e.data as any)?.type === 'container' && (e.data as any).action === 'die') deaths.push(e.data as any);
  });
});
after(async () => {
  if (s) {
    for (const id of created)
      await s.env.engine.docker
        .getContainer(id)
        .remove({ force: true, v: true })
        .catch(() => {});
    await s.stop();
  }
});

async function appWith(name: string): Promise<{ id: string; name: string }> {
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: BASE_IMAGE } });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

async function run(app: string, cmd: string, host: Record<string, unknown> = {}): Promise<string> {
  const ctr = await s!.env.engine.docker.createContainer({
    Image: BASE_IMAGE,
    name: `svc-${app}-web-w14`,
    Cmd: ['sh', '-c', cmd],
    Labels: {
      ...ownerLabels(s!.env.engine),
      [LABEL_APP]: app,
      [LABEL_SERVICE]: 'web',
      [LABEL_DEPLOYMENT]: 'w14test',
      'svc.test': 'w14-crash',
    },
    HostConfig: host,
  });
  created.push(ctr.id);
  await ctr.start();
  return ctr.id;
}

const crashesOf = (app: string) =>
  crashes.filter((e) => (e.data as any).app === app).map((e) => e.data as any);

test('a container exiting in a loop: one app_crashed with exit code and logs; status crash_loop', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await appWith(`w14-loop-${suffix}`);
  await run(app.name, 'echo "starting worker"; echo "fatal: cannot connect to db" >&2; exit 3', {
    RestartPolicy: { Name: 'always' },
  });
  const status = await poll(
    'crash_loop status',
    async () => {
      const r = await c.req('GET', `/api/apps/${app.id}`);
      return r.body.app.status === 'crash_loop' ? r.body.app.status : null;
    },
    120_000,
    250,
  );
  assert.equal(status, 'crash_loop');
  const got = crashesOf(app.name);
  assert.equal(got.length, 1, 'one notification per episode, however many restarts');
  assert.equal(got[0].exit_code, 3);
  assert.equal(got[0].oom, false);
  assert.equal(got[0].service, 'web');
  assert.equal(got[0].app_id, app.id);
  assert.ok(got[0].last_logs.includes('fatal: cannot connect to db'), JSON.stringify(got[0].last_logs));
});

test('a container killed by its memory limit: app_crashed with oom=true; status oom', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await appWith(`w14-oom-${suffix}`);
  // Doubling a shell string until the 8 MiB limit (no swap) kills it.
  await run(app.name, 'echo "loading everything"; x=aaaaaaaa; while true; do x="$x$x"; done', {
    Memory: 8 * 1024 * 1024,
    MemorySwap: 8 * 1024 * 1024,
  });
  const ev = await poll('app_crashed (oom)', () => crashesOf(app.name)[0], 120_000, 250);
  assert.equal(ev.exit_code, 137, JSON.stringify(ev));
  assert.equal(ev.oom, true, JSON.stringify(ev));
  assert.equal(ev.kind, 'oom');
  assert.ok(ev.last_logs.includes('loading everything'));
  const r = await poll(
    'oom status',
    async () => {
      const a = await c.req('GET', `/api/apps/${app.id}`);
      return a.body.app.status === 'oom' ? a : null;
    },
    60_000,
    250,
  );
  assert.equal(r.body.app.status, 'oom');
});

// On cgroup v1 the engine can lose the kernel's OOM notice (no `oom` event, OOMKilled false) when
// its shim is slow, as on a busy host: what the watcher then sees is a die with exit code 137
// that nobody asked for. A container that exits 137 by itself under a memory limit shows exactly
// that, every time.
test('a SIGKILL exit nobody asked for under a memory limit is an OOM kill, even without the engine saying so', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await appWith(`w14-lost-${suffix}`);
  const id = await run(app.name, 'echo "loading everything"; exit 137', { Memory: 8 * 1024 * 1024 });
  const ev = await poll('app_crashed (lost oom notice)', () => crashesOf(app.name)[0], 120_000, 250);
  const info = await s!.env.engine.docker.getContainer(id).inspect();
  assert.equal(info.State.OOMKilled, false, 'the engine reported no OOM kill');
  assert.equal(ev.exit_code, 137);
  assert.equal(ev.oom, true, JSON.stringify(ev));
  assert.equal(ev.kind, 'oom');
});

test('a container killed on purpose with SIGKILL under a memory limit is neither a crash nor an OOM kill', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await appWith(`w14-kill-${suffix}`);
  const id = await run(app.name, 'echo up; while true; do sleep 1; done', { Memory: 8 * 1024 * 1024 });
  const ctr = s!.env.engine.docker.getContainer(id);
  await poll('running', async () => (await ctr.inspect()).State.Running, 60_000, 100);
  await ctr.kill({ signal: 'SIGKILL' });
  const name = (await ctr.inspect()).Name.replace(/^\//, '');
  assert.equal((await ctr.inspect()).State.ExitCode, 137);
  // The watcher saw the `die` before the bus heard of it; then wait for its decision (it waits for
  // a late OOM notice first).
  await poll('die seen', () => deaths.some((d) => d.container === name), 60_000, 100);
  await s!.env.crashes!.idle();
  assert.equal(crashesOf(app.name).length, 0);
  assert.equal(s!.env.crashes!.state(app.name), null);
});

// The watcher decides a SIGKILL exit after a short wait for a late OOM notice, then reads the
// database: a control plane stopped meanwhile waits for that before its database closes.
test("the server's stop waits for a die being decided: its app_crashed comes before the database closes", async (t) => {
  if (!(await needEngine(t))) return;
  const own = await startTestServer();
  let stopped = false;
  try {
    const oc = await adminClient(own);
    const name = `w14-shut-${suffix}`;
    const r = await oc.req('POST', '/api/apps', { name, source: { type: 'image', image: BASE_IMAGE } });
    assert.equal(r.status, 201, r.text);
    const seen: any[] = [];
    own.env.bus.onAny((e) => seen.push(e.data));
    const ctr = await own.env.engine.docker.createContainer({
      Image: BASE_IMAGE,
      name: `svc-${name}-web-w14`,
      Cmd: ['sh', '-c', 'echo "about to go"; exit 137'],
      Labels: {
        ...ownerLabels(own.env.engine),
        [LABEL_APP]: name,
        [LABEL_SERVICE]: 'web',
        [LABEL_DEPLOYMENT]: 'w14test',
        'svc.test': 'w14-crash',
      },
    });
    created.push(ctr.id);
    await ctr.start();
    // The bus hears of the die after the watcher took it; stop while it waits for an OOM notice.
    await poll('die seen', () => seen.some((d) => d?.type === 'container' && d.action === 'die'), 60_000, 20);
    await own.stop();
    stopped = true;
    const crash = seen.find((d) => d?.type === 'app_crashed');
    assert.ok(crash, 'app_crashed published before the stop returned');
    assert.equal(crash.exit_code, 137);
    assert.equal(crash.oom, false, 'no memory limit: a plain crash');
  } finally {
    if (!stopped) await own.stop();
  }
});

test('a container stopped on purpose is not a crash', async (t) => {
  if (!(await needEngine(t))) return;
  const app = await appWith(`w14-stop-${suffix}`);
  const id = await run(app.name, 'trap "exit 0" TERM; echo up; while true; do sleep 1; done');
  await poll(
    'running',
    async () => (await s!.env.engine.docker.getContainer(id).inspect()).State.Running,
    60_000,
    100,
  );
  await s!.env.engine.docker.getContainer(id).stop({ t: 2 });
  // Wait until the status reflects the stop (the die event was processed), then check nothing was sent.
  await poll(
    'stopped status',
    async () => (await c.req('GET', `/api/apps/${app.id}`)).body.app.status === 'stopped',
    60_000,
    250,
  );
  assert.equal(crashesOf(app.name).length, 0);
});
