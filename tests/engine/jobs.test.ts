// Jobs and one-off commands against the real engine, through the API: a job every minute run by
// the real scheduler with the app's secret, run now, a failure with its exit code and job_failed
// (to a notification channel and the jobs topic), a timeout, each overlap policy, the one-off's
// container (same image, env, network and limits as the service; no alias, no ports; gone after),
// and a one-off command's output streamed on run:<id> with its exit code.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { dockerReachable, ensureBaseImage, needDocker, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, ADMIN, type Client, type TestServer } from '../_support/server.js';
import { startReceiver, RECEIVER_HOST, type Receiver } from '../_support/receiver.js';
import { openSocket, wsUrl } from '../_support/ws.js';
import { LABEL_INSTANCE, listAppContainers, listRunContainers } from '#lib/docker/index.js';
import { until } from './_helpers.js';
import { JobScheduler } from '#lib/jobs/scheduler.js';
import { cleanupApp, waitStatus } from './_deploy.js';
import { randomBytes } from 'node:crypto';

let s: TestServer;
let c: Client;
let recv: Receiver;
const apps = new Set<string>();

before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  recv = await startReceiver();
  s = await startTestServer({ SVC_NOTIFY_ALLOW: '127.0.0.1' });
  Object.assign(s.env.notifier.transport, {
    agent: recv.agent,
    resolve: async (host: string) => {
      if (host === RECEIVER_HOST) return [{ address: '127.0.0.1', family: 4 as const }];
      throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
    },
  });
  c = await adminClient(s);
  const up = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(up.status, 200, up.text);
});

after(async () => {
  if (s) {
    for (const a of apps) await cleanupApp(s.env.engine, a);
    await s.stop();
  }
  await recv?.close();
});

/** An inline compose app: one busybox service that waits, with limits and hardening, deployed. */
async function deployedApp(env: Record<string, string> = {}): Promise<{ id: string; name: string }> {
  const name = `job-${randomBytes(3).toString('hex')}`;
  apps.add(name);
  const compose = [
    'services:',
    '  app:',
    `    image: ${BASE_IMAGE}`,
    `    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]`,
    '    mem_limit: 96m',
    '    cap_drop: [NET_RAW]',
    '    labels:',
    '      team: jobs',
    '',
  ].join('\n');
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'compose', compose } });
  assert.equal(r.status, 201, r.text);
  const id = r.body.app.id;
  if (Object.keys(env).length) {
    const put = await c.req('PUT', `/api/apps/${id}/env`, {
      items: Object.entries(env).map(([key, value]) => ({ key, value, secret: true })),
    });
    assert.equal(put.status, 200, put.text);
  }
  const d = await c.req('POST', `/api/apps/${id}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(c, id, d.body.deployment.id, ['succeeded']);
  return { id, name };
}

async function addJob(appId: string, body: Record<string, unknown>): Promise<string> {
  const r = await c.req('POST', `/api/apps/${appId}/jobs`, { schedule: '0 0 1 1 *', ...body });
  assert.equal(r.status, 201, r.text);
  return r.body.job.id;
}

async function runNow(appId: string, jid: string): Promise<any> {
  const r = await c.req('POST', `/api/apps/${appId}/jobs/${jid}/run`);
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.run.status, 'queued');
  return r.body.run;
}

async function ended(appId: string, rid: string): Promise<any> {
  return until(`run ${rid} to end`, async () => {
    const r = await c.req('GET', `/api/apps/${appId}/runs/${rid}`);
    return ['queued', 'running'].includes(r.body.run.status) ? null : r.body.run;
  });
}

async function lines(appId: string, rid: string, stream?: string): Promise<string[]> {
  const r = await c.req('GET', `/api/apps/${appId}/runs/${rid}/logs`);
  return (r.body.items as any[]).filter((l) => !stream || l.stream === stream).map((l) => l.line);
}

test('a job every minute is started by the scheduler at its due time, with the app secret (masked in its output)', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await deployedApp({ TOKEN: 'tok-9f8e7d6c' });
  // The scheduler's clock runs a little ahead, so the next minute begins in about 4 s of real time.
  const real = s.env.now;
  const offset = (((56_000 - (Date.now() % 60_000)) % 60_000) + 60_000) % 60_000;
  s.env.now = () => Date.now() + offset;
  try {
    const jid = await addJob(app.id, {
      name: 'minutely',
      schedule: '* * * * *',
      command: ['sh', '-c', 'test "$TOKEN" = tok-9f8e7d6c && echo "token ok: $TOKEN"'],
    });
    const run = await until('a scheduled run to succeed', async () => {
      const r = await c.req('GET', `/api/apps/${app.id}/jobs/${jid}/runs`);
      return r.body.items.find((x: any) => x.status === 'succeeded');
    });
    assert.equal(run.trigger, 'schedule');
    assert.equal(new Date(run.scheduled_for).getUTCSeconds(), 0, 'a minute boundary');
    assert.ok(Date.parse(run.started_at) >= Date.parse(run.scheduled_for) - offset);
    assert.equal(run.exit_code, 0);
    assert.equal(run.service, 'app');
    assert.deepEqual(await lines(app.id, run.id, 'stdout'), ['token ok: ***']);
    const job = await c.req('GET', `/api/apps/${app.id}/jobs/${jid}`);
    assert.equal(job.body.job.last_run.id, run.id);
    assert.ok(Date.parse(job.body.job.next_run_at) > Date.parse(run.scheduled_for));
    await c.req('PATCH', `/api/apps/${app.id}/jobs/${jid}`, { enabled: false });
  } finally {
    s.env.now = real;
  }
});

test('on one host a scheduled run is made ahead of its due time and only started at it; one made for an older deployment is dropped', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await deployedApp();
  const jid = await addJob(app.id, { name: 'ahead', schedule: '0 0 1 1 *', command: ['echo', 'made ahead'] });
  const due = Date.parse('2031-01-01T00:00:00Z');
  const at = { now: due - 10_000 };
  const sch = new JobScheduler({ ...s.env, now: () => at.now }, { maxSleepMs: 3_600_000 });
  const made = async () =>
    (await listRunContainers(s.env.engine)).filter((x) => x.app === app.name && x.state === 'created');
  try {
    sch.start();
    const [ahead] = await until('the one-off made ahead of the due time', async () => {
      const m = await made();
      return m.length === 1 ? m : null;
    });
    at.now = due + 100;
    await sch.tick(at.now);
    const run = await until('the run of the due time', async () => {
      const r = (await c.req('GET', `/api/apps/${app.id}/jobs/${jid}/runs`)).body.items as any[];
      return r.find((x) => x.scheduled_for === new Date(due).toISOString() && x.status === 'succeeded');
    });
    assert.equal(run.id, ahead!.runId, 'the run is the one its container was made for');
    assert.deepEqual(await lines(app.id, run.id, 'stdout'), ['made ahead']);
    assert.deepEqual(await made(), [], 'nothing made ahead is left');

    // A deployment between the making and the due time: what was made from the old one is dropped.
    const next = Date.parse('2032-01-01T00:00:00Z');
    at.now = next - 10_000;
    await sch.tick(at.now);
    await sch.stop();
    sch.start();
    await until('the next one-off made ahead', async () => ((await made()).length === 1 ? true : null));
    const d = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
    await waitStatus(c, app.id, d.body.deployment.id, ['succeeded']);
    at.now = next + 100;
    await sch.tick(at.now);
    const again = await until('the run of the next due time', async () => {
      const r = (await c.req('GET', `/api/apps/${app.id}/jobs/${jid}/runs`)).body.items as any[];
      return r.find((x) => x.scheduled_for === new Date(next).toISOString() && x.status === 'succeeded');
    });
    assert.equal(again.deployment_id, d.body.deployment.id, 'it ran the new deployment');
    assert.deepEqual(await made(), []);
  } finally {
    await sch.stop();
    await c.req('PATCH', `/api/apps/${app.id}/jobs/${jid}`, { enabled: false });
  }
});

test("run now: the one-off has the service's image, env, network, limits and labels, no alias, no port, and goes when done", async (t) => {
  if (!(await needDocker(t))) return;
  const app = await deployedApp({ DB_URL: 'postgres://u:pw-123456@db/x' });
  const jid = await addJob(app.id, {
    name: 'inspect',
    command: ['sh', '-c', 'echo "db=$DB_URL"; sleep 3; echo done'],
  });
  const queued = await runNow(app.id, jid);
  const service = (await listAppContainers(s.env.engine, app.name))[0]!;
  const oneOff = await until('the run container', async () =>
    (await listRunContainers(s.env.engine)).find((x) => x.runId === queued.id),
  );
  const info = await s.env.engine.docker.getContainer(oneOff.id).inspect();
  const svc = await s.env.engine.docker.getContainer(service.id).inspect();
  assert.equal(info.Image, svc.Image, 'the exact image of the live version');
  assert.ok(info.Config.Env.includes('DB_URL=postgres://u:pw-123456@db/x'));
  assert.equal(info.HostConfig.Memory, svc.HostConfig.Memory);
  assert.equal(info.HostConfig.Memory, 96 * 1024 * 1024);
  assert.deepEqual(info.HostConfig.CapDrop, svc.HostConfig.CapDrop);
  assert.equal(info.HostConfig.RestartPolicy?.Name, 'no');
  assert.deepEqual(info.HostConfig.PortBindings ?? {}, {});
  assert.equal(info.Config.Labels['svc.app'], app.name);
  assert.equal(info.Config.Labels['svc.run'], queued.id);
  assert.equal(info.Config.Labels[LABEL_INSTANCE], s.env.engine.owner.instanceId);
  assert.equal(info.Config.Labels.team, 'jobs');
  const nets = Object.entries(info.NetworkSettings.Networks);
  assert.deepEqual(
    nets.map(([n]) => n),
    [`svc-${app.name}`],
  );
  assert.ok(!(nets[0]![1].Aliases ?? []).includes('app'), 'nobody reaches it by the service name');
  const services = await c.req('GET', `/api/apps/${app.id}/services`);
  assert.equal(services.body.items.length, 1, 'a one-off is no service');
  const run = await ended(app.id, queued.id);
  assert.equal(run.status, 'succeeded');
  assert.equal(run.trigger, 'manual');
  assert.ok(run.started_at && run.finished_at);
  assert.deepEqual(await lines(app.id, run.id, 'stdout'), ['db=***', 'done']);
  assert.equal(
    (await listRunContainers(s.env.engine)).some((x) => x.runId === run.id),
    false,
    'its container is removed, its output kept',
  );
});

test('a failure records its exit code and emits job_failed to notification channels and the jobs topic; a timeout stops it', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await deployedApp();
  const ch = await c.req('POST', '/api/settings/notifications', {
    kind: 'slack',
    name: 'jobs hook',
    url: recv.url('/jobs'),
    events: ['job_failed'],
  });
  assert.equal(ch.status, 201, ch.text);
  const seen: any[] = [];
  const off = s.env.bus.onAny((e) => e.topic === 'jobs' && seen.push(e.data));
  try {
    const jid = await addJob(app.id, { name: 'breaks', command: ['sh', '-c', 'echo oops >&2; exit 3'] });
    const run = await ended(app.id, (await runNow(app.id, jid)).id);
    assert.equal(run.status, 'failed');
    assert.equal(run.exit_code, 3);
    assert.equal(run.reason, 'exited with code 3');
    assert.deepEqual(await lines(app.id, run.id, 'stderr'), ['oops']);
    // Published once the run's one-off is removed, which may be just after its row says failed.
    const event = await until('job_failed on the jobs topic', async () =>
      seen.find((d) => d.type === 'job_failed' && d.run_id === run.id),
    );
    assert.ok(event, 'job_failed on the jobs topic');
    assert.equal(event.exit_code, 3);
    assert.equal(event.job, 'breaks');
    assert.ok(seen.some((d) => d.type === 'run' && d.run.id === run.id && d.run.status === 'running'));
    const hook = await until('the delivery to the channel', async () =>
      recv.received.find((x) => x.path === '/jobs' && /breaks of .* failed/.test(x.json?.text ?? '')),
    );
    assert.match(hook.body, /exited with code 3/);
    assert.match(hook.body, /job_failed/);

    const slow = await addJob(app.id, { name: 'slow', command: ['sleep', '120'], timeout_s: 2 });
    const timed = await ended(app.id, (await runNow(app.id, slow)).id);
    assert.equal(timed.status, 'timed_out');
    assert.equal(timed.reason, 'ran longer than its timeout of 2 s');
    assert.ok(
      await until('job_failed of the timeout', async () =>
        seen.some((d) => d.type === 'job_failed' && d.run_id === timed.id && d.status === 'timed_out'),
      ),
    );
    assert.equal(
      (await listRunContainers(s.env.engine)).some((x) => x.runId === timed.id),
      false,
    );
  } finally {
    off();
    await c.req('DELETE', `/api/settings/notifications/${ch.body.channel.id}`);
  }
});

test('overlap: forbid refuses a second run, replace cancels the running one, allow runs both', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await deployedApp();
  const long = ['sh', '-c', 'echo started; sleep 60'];
  const forbid = await addJob(app.id, { name: 'forbid', command: long });
  const first = await runNow(app.id, forbid);
  await until(
    'it runs',
    async () => (await c.req('GET', `/api/apps/${app.id}/runs/${first.id}`)).body.run.status === 'running',
  );
  const second = await c.req('POST', `/api/apps/${app.id}/jobs/${forbid}/run`);
  assert.equal(second.status, 409, second.text);
  assert.match(second.body.error, /still running \(concurrency: forbid\)/);
  const cancel = await c.req('POST', `/api/apps/${app.id}/runs/${first.id}/cancel`);
  assert.equal(cancel.status, 200, cancel.text);
  assert.equal(cancel.body.run.status, 'canceled');
  assert.equal((await c.req('POST', `/api/apps/${app.id}/runs/${first.id}/cancel`)).status, 409);

  const replace = await addJob(app.id, { name: 'replace', command: long, concurrency: 'replace' });
  const old = await runNow(app.id, replace);
  await until(
    'it runs',
    async () => (await c.req('GET', `/api/apps/${app.id}/runs/${old.id}`)).body.run.status === 'running',
  );
  const fresh = await runNow(app.id, replace);
  const replaced = await ended(app.id, old.id);
  assert.equal(replaced.status, 'canceled');
  assert.match(replaced.reason, /replaced/);
  await until(
    'the new one runs',
    async () => (await c.req('GET', `/api/apps/${app.id}/runs/${fresh.id}`)).body.run.status === 'running',
  );
  await c.req('POST', `/api/apps/${app.id}/runs/${fresh.id}/cancel`);

  const allow = await addJob(app.id, { name: 'allow', command: long, concurrency: 'allow' });
  const a = await runNow(app.id, allow);
  const b = await runNow(app.id, allow);
  await until('both run at once', async () => {
    const mine = (await listRunContainers(s.env.engine)).filter((x) => x.runId === a.id || x.runId === b.id);
    return mine.length === 2 && mine.every((x) => x.state === 'running');
  });
  for (const r of [a, b])
    assert.equal((await c.req('POST', `/api/apps/${app.id}/runs/${r.id}/cancel`)).status, 200);
});

test('a one-off command streams its output on run:<id> (lines naming app and service) and ends with its exit code; the next one replays what it missed', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await deployedApp();
  const ws = await openSocket(wsUrl(s.url), { cookie: c.cookieHeader(), origin: s.url });
  const events: any[] = [];
  ws.on('message', (m) => events.push(JSON.parse(String(m))));
  const r = await c.req('POST', `/api/apps/${app.id}/runs`, {
    command: ['sh', '-c', 'for i in 1 2 3; do echo line $i; sleep 1; done; echo last >&2; exit 7'],
  });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.run.trigger, 'command');
  const rid = r.body.run.id;
  ws.send(JSON.stringify({ type: 'subscribe', topic: `run:${rid}` }));
  const end = await until('the end of the run on the socket', async () =>
    events.find((e) => e.type === 'event' && e.data.type === 'run' && e.data.run.status === 'failed'),
  );
  assert.equal(end.data.run.exit_code, 7);
  const got = events
    .filter((e) => e.type === 'event' && e.data.type === 'line' && e.data.stream !== 'system')
    .map((e) => `${e.data.stream}:${e.data.line}`);
  assert.deepEqual([...new Set(got)], ['stdout:line 1', 'stdout:line 2', 'stdout:line 3', 'stderr:last']);
  const seqs = events.filter((e) => e.data?.type === 'line').map((e) => e.data.seq);
  assert.deepEqual(
    seqs,
    [...seqs].sort((x, y) => x - y),
    'in order, without a gap or a repeat',
  );
  assert.equal(new Set(seqs).size, seqs.length);
  // Each line names its app and service: the shape the log drains take run lines in (lib/drains).
  const lines = events.filter((e) => e.type === 'event' && e.data.type === 'line');
  assert.ok(lines.length > 0);
  for (const e of lines) {
    assert.equal(e.data.app_id, app.id);
    assert.equal(e.data.service, 'app');
    assert.ok(!Number.isNaN(Date.parse(e.data.at)), e.data.at);
  }
  ws.close();

  // A late subscriber gets the whole output, then the final state.
  const late = await openSocket(wsUrl(s.url), { cookie: c.cookieHeader(), origin: s.url });
  const replay: any[] = [];
  late.on('message', (m) => replay.push(JSON.parse(String(m))));
  late.send(JSON.stringify({ type: 'subscribe', topic: `run:${rid}` }));
  await until('the replay', async () => replay.find((e) => e.data?.type === 'run'));
  const replayed = replay.filter((e) => e.data?.type === 'line');
  assert.ok(replayed.some((e) => e.data.line === 'line 3'));
  assert.ok(replayed.every((e) => e.data.app_id === app.id && e.data.service === 'app'));
  late.close();
  await new Promise((res) => late.once('close', res));
  assert.equal(WebSocket.CLOSED, late.readyState);

  const audit = await c.req('GET', `/api/audit?action=${encodeURIComponent('POST /api/apps/{id}/runs')}`);
  assert.ok(
    audit.body.items.some((e: any) => e.detail?.run === rid),
    'the command is audited',
  );
});
