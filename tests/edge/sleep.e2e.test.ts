// Sleeping apps end to end: a real control plane, real Caddy driven through its admin API, apps on
// the real Docker engine, visitors through Caddy with real TLS. The idle check is driven by handing
// it a later clock (the stop and the start are real). The tests run in order and share one server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request as httpRequest } from 'node:http';
import type WebSocket from 'ws';
import { needEdge, startEdgeLab, type EdgeLab, type FetchResult } from '../_support/edge.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, apiToken, type TestServer, type Client } from '../_support/server.js';
import { openSocket, wsUrl } from '../_support/ws.js';
import { poll } from '../_support/wait.js';
import { waitStatus, cleanupApp } from '../engine/_deploy.js';
import { appName } from '../engine/_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';

const run = promisify(execFile);
const IMAGE = `svc-sleep/web:${process.pid}`;
const BASE = 'sleep.test';

let lab: EdgeLab | null = null;
let server: TestServer | null = null;
let c: Client;
let ws: WebSocket | null = null;
const events: any[] = [];
const apps: Array<{ id: string; name: string }> = [];

after(async () => {
  ws?.close();
  if (server) {
    for (const a of apps) await cleanupApp(server.env.engine, a.name);
    await server.stop();
  }
  await lab?.stop();
  await run('docker', ['image', 'rm', '-f', IMAGE]).catch(() => {});
});

/** Serves its container's hostname (the first 12 hex digits of its id) at /. */
async function buildImage(): Promise<void> {
  const dockerfile = [
    `FROM ${BASE_IMAGE}`,
    'EXPOSE 8080',
    `CMD ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www; hostname > /www/index.html; httpd -f -p 8080 -h /www & wait"]`,
  ].join('\n');
  await run(
    'sh',
    [
      '-c',
      'printf "%s\\n" "$1" | docker build -q --network none --label svc.test=sleep -t "$2" -',
      'sh',
      dockerfile,
      IMAGE,
    ],
    { timeout: 120_000 },
  );
}

async function ready(t: import('node:test').TestContext): Promise<boolean> {
  if (!(await needEdge(t)) || !(await needEngine(t))) return false;
  if (server) return true;
  lab ??= await startEdgeLab();
  await buildImage();
  // The periodic idle check never fires by itself here: the tests call it with their own clock.
  server = await startTestServer(
    { ...lab.vars, SVC_BASE_DOMAIN: BASE },
    { edge: { checkIntervalMs: 1000, checkerTickMs: 250 }, sleep: { intervalMs: 3_600_000 } },
  );
  c = await adminClient(server);
  ws = await openSocket(wsUrl(server.url), { authorization: `Bearer ${await apiToken(c, 'sleep')}` });
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.type === 'event' && m.topic === 'apps') events.push(m.data);
  });
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'apps' }));
  return true;
}

async function deployedApp(prefix: string): Promise<{ id: string; name: string }> {
  const name = appName(prefix);
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: IMAGE } });
  assert.equal(r.status, 201, r.text);
  const app = { id: r.body.app.id, name };
  apps.push(app);
  assert.equal((await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080 })).status, 200);
  const d = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(c, app.id, d.body.deployment.id, ['succeeded']);
  await until(`${name}.${BASE}`, (x) => x.status === 200, 'the app served through Caddy');
  return app;
}

function until(host: string, ok: (r: FetchResult) => boolean, what: string): Promise<FetchResult> {
  return poll(
    what,
    async () => {
      const r = await lab!.https(host, '/');
      return ok(r) ? r : null;
    },
    90_000,
    250,
  );
}

async function runningIds(name: string): Promise<string[]> {
  return (await listAppContainers(server!.env.engine, name))
    .filter((x) => x.state === 'running')
    .map((x) => x.id.slice(0, 12));
}

const status = async (id: string) => (await c.req('GET', `/api/apps/${id}`)).body.app.status as string;
const later = (minutes: number) => Date.now() + minutes * 60_000;
/** Caddy's running routes that send requests to the wake path. */
async function wakeRoutes(): Promise<string[]> {
  const servers = ((await lab!.admin('/config/apps/http/servers')) ?? {}) as Record<
    string,
    { routes: unknown[] }
  >;
  const out: string[] = [];
  for (const s of Object.values(servers))
    for (const r of s.routes)
      if (JSON.stringify(r).includes('X-Svc-Wake')) out.push(String((r as { '@id'?: string })['@id']));
  return out;
}

let sleepy: { id: string; name: string };
let awake: { id: string; name: string };

test('sleep_after_minutes: 1..10080 or null, shown on the app; anything else is a 400 that changes nothing', async (t) => {
  if (!(await ready(t))) return;
  sleepy = await deployedApp('slp');
  awake = await deployedApp('awk');
  for (const bad of [0, 10_081, 2.5, '5', -1]) {
    const r = await c.req('PATCH', `/api/apps/${sleepy.id}`, { sleep_after_minutes: bad });
    assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
  }
  assert.equal((await c.req('GET', `/api/apps/${sleepy.id}`)).body.app.sleep_after_minutes, null);
  const r = await c.req('PATCH', `/api/apps/${sleepy.id}`, { sleep_after_minutes: 5 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.app.sleep_after_minutes, 5);
  assert.equal(
    (await c.req('GET', '/api/apps')).body.items.find((a: any) => a.id === sleepy.id).sleep_after_minutes,
    5,
  );
  assert.equal((await c.req('GET', `/api/apps/${awake.id}`)).body.app.sleep_after_minutes, null);
});

test('an idle app sleeps: containers stopped, status sleeping, an apps event and a system audit line; an app without the setting never sleeps', async (t) => {
  if (!(await ready(t))) return;
  const sleeper = server!.env.sleeper;
  assert.deepEqual(await sleeper.check(later(4)), [], 'not idle for 5 minutes yet');
  assert.deepEqual(
    await sleeper.check(later(60 * 24 * 8)),
    [sleepy.id],
    'only the app with the setting sleeps, whatever the idle time',
  );
  assert.deepEqual(await runningIds(sleepy.name), [], 'its containers are stopped');
  assert.equal((await runningIds(awake.name)).length, 1, 'the other app runs on');
  assert.equal(await status(sleepy.id), 'sleeping');
  assert.equal(await status(awake.id), 'running');
  const ev = await poll(
    'the sleeping event',
    async () => events.find((e) => e.type === 'sleeping' && e.app_id === sleepy.id) ?? null,
    10_000,
    50,
  );
  assert.equal(ev.idle_minutes, 5);
  assert.ok(typeof ev.memory_bytes === 'number' && ev.memory_bytes > 0, `memory freed: ${ev.memory_bytes}`);
  assert.ok(events.some((e) => e.type === 'status' && e.app_id === sleepy.id && e.status === 'sleeping'));
  const audit = (await c.req('GET', '/api/audit?action=app.sleeping')).body.items;
  assert.equal(audit.length, 1, JSON.stringify(audit));
  assert.equal(audit[0].actor.type, 'system');
  assert.equal(audit[0].target.id, sleepy.id);
  // Caddy routes the sleeping app's host, and only it, to the wake path.
  assert.deepEqual(await wakeRoutes(), [`svc-auto-${sleepy.id}-app`]);
});

test('two concurrent requests through Caddy wake it once and are both answered by the app itself', async (t) => {
  if (!(await ready(t))) return;
  const sleeper = server!.env.sleeper;
  const before = { ...sleeper.counts };
  const host = `${sleepy.name}.${BASE}`;
  const [a, b] = await Promise.all([lab!.https(host, '/'), lab!.https(host, '/')]);
  assert.equal(a.status, 200, a.body);
  assert.equal(b.status, 200, b.body);
  const ids = await runningIds(sleepy.name);
  assert.equal(ids.length, 1);
  // The body is the container's own hostname: the app answered, not a holding page.
  assert.equal(a.body.trim(), ids[0]);
  assert.equal(b.body.trim(), ids[0]);
  assert.equal(sleeper.counts.wakes - before.wakes, 1, 'one wake');
  assert.equal(sleeper.counts.wakeRequests - before.wakeRequests, 2, 'both held on the wake path');
  assert.equal(await status(sleepy.id), 'running');
  const woken = events.filter((e) => e.app_id === sleepy.id && (e.type === 'waking' || e.type === 'woken'));
  assert.deepEqual(
    woken.map((e) => e.type),
    ['waking', 'woken'],
  );
  const audit = (await c.req('GET', '/api/audit?action=app.woken')).body.items;
  assert.equal(audit.length, 1);
  assert.equal(audit[0].actor.type, 'system');
  assert.equal(audit[0].target.id, sleepy.id);
  // After the wake nothing differs: Caddy routes straight to the app again.
  assert.deepEqual(await wakeRoutes(), []);
  const next = await lab!.https(host, '/');
  assert.equal(next.body.trim(), ids[0]);
  assert.equal(
    sleeper.counts.wakeRequests - before.wakeRequests,
    2,
    'the next request did not go through the wake path',
  );
});

test('requests for hosts that are not sleeping never reach the wake path; a forged wake header is refused and wakes nothing', async (t) => {
  if (!(await ready(t))) return;
  const sleeper = server!.env.sleeper;
  const before = { ...sleeper.counts };
  for (const h of [awake.name, sleepy.name])
    assert.equal((await lab!.https(`${h}.${BASE}`, '/')).status, 200);
  assert.deepEqual(sleeper.counts, before);
  // Put it to sleep again, then knock on the control plane directly with a made-up header.
  assert.deepEqual(await sleeper.check(later(60)), [sleepy.id]);
  const afterSleep = { ...sleeper.counts };
  const port = server!.running.port;
  for (const value of [`bad ${sleepy.id} app 8080`, `${'x'.repeat(43)} ${sleepy.id} app 8080`, '']) {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/api/apps', headers: { 'x-svc-wake': value }, agent: false },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(r.status, 403, r.body);
    assert.equal(JSON.parse(r.body).code, 'forbidden', 'never dispatched to the API');
  }
  assert.equal(sleeper.counts.wakes, afterSleep.wakes, 'nothing woke');
  assert.deepEqual(await runningIds(sleepy.name), []);
  assert.equal(await status(sleepy.id), 'sleeping');
  // Turning the setting off wakes it for good.
  const off = await c.req('PATCH', `/api/apps/${sleepy.id}`, { sleep_after_minutes: null });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.app.status, 'running');
  assert.deepEqual(await sleeper.check(later(60 * 24 * 30)), []);
});
