// Sleeping apps end to end: a real control plane, real Caddy driven through its admin API, apps on
// the real Docker engine, visitors through Caddy with real TLS. The idle check is driven by handing
// it a later clock (the stop and the start are real). The tests run in order and share one server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request as httpRequest } from 'node:http';
import WebSocket from 'ws';
import { needEdge, startEdgeLab, type EdgeLab, type FetchResult } from '../_support/edge.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, apiToken, type TestServer, type Client } from '../_support/server.js';
import { openSocket, wsUrl } from '../_support/ws.js';
import { poll } from '../_support/wait.js';
import { waitStatus, cleanupApp } from '../engine/_deploy.js';
import { appName } from '../engine/_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';
import { needStackImages } from '../_support/stackimages.js';
import {
  buildEchoImage,
  closed,
  nextMessage,
  opened,
  upgrade,
  wsThroughCaddy,
  type Upgrade,
} from '../_support/wsapp.js';

const run = promisify(execFile);
const IMAGE = `svc-sleep/web:${process.pid}`;
const WS_IMAGE = `svc-sleep/ws:${process.pid}`;
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
  await run('docker', ['image', 'rm', '-f', IMAGE, WS_IMAGE]).catch(() => {});
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

async function deployedApp(prefix: string, image = IMAGE): Promise<{ id: string; name: string }> {
  const name = appName(prefix);
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image } });
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
/**
 * Whether the proxy sends the app's requests to the wake path: on one host, the resolver has no
 * address for it (Caddy's lookup fails and falls back to the control plane).
 */
const toWakePath = (appId: string) => server!.env.edge.resolver!.answers(appId) === null;
/** Config loads so far, as the control plane counts them and as Caddy's log shows them. */
const loads = () => [server!.env.edge.proxy.state().loads, lab!.caddyLoads()];

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
  const loaded = loads();
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
  // The sleeping app's host, and only it, goes to the wake path, and no config was loaded for it.
  assert.equal(toWakePath(sleepy.id), true);
  assert.equal(toWakePath(awake.id), false);
  assert.deepEqual(loads(), loaded, 'sleeping loaded no config into Caddy');
});

test('two concurrent requests through Caddy wake it once and are both answered by the app itself', async (t) => {
  if (!(await ready(t))) return;
  const sleeper = server!.env.sleeper;
  const before = { ...sleeper.counts };
  const loaded = loads();
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
  // After the wake nothing differs: Caddy routes straight to the app again, with no config loaded.
  assert.equal(toWakePath(sleepy.id), false);
  assert.deepEqual(loads(), loaded, 'waking loaded no config into Caddy');
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

// WebSockets to a sleeping app: an app whose container speaks WebSocket itself (tests/_support/wsapp.ts).
let wsApp: { id: string; name: string };

/** Through Caddy with real TLS to the app's host, as a browser would. */
const throughCaddy = (host: string) => wsThroughCaddy(lab!, host);

test('WebSocket upgrades through Caddy to a sleeping app are held, share one wake and are connected to the app itself; a close from either side closes both sockets', async (t) => {
  if (!(await ready(t))) return;
  const images = await needStackImages(t);
  if (!images) return;
  await buildEchoImage(WS_IMAGE, images.node, 'sleep');
  wsApp = await deployedApp('wsk', WS_IMAGE);
  const host = `${wsApp.name}.${BASE}`;
  assert.equal((await c.req('PATCH', `/api/apps/${wsApp.id}`, { sleep_after_minutes: 5 })).status, 200);
  const sleeper = server!.env.sleeper;
  assert.deepEqual(await sleeper.check(later(60)), [wsApp.id]);
  assert.deepEqual(await runningIds(wsApp.name), []);
  const before = { ...sleeper.counts };

  const [a, b] = (await Promise.all([throughCaddy(host), throughCaddy(host)])).map(opened) as [
    WebSocket,
    WebSocket,
  ];
  const ids = await runningIds(wsApp.name);
  assert.equal(ids.length, 1);
  assert.equal(sleeper.counts.wakes - before.wakes, 1, 'one wake');
  assert.equal(sleeper.counts.wakeRequests - before.wakeRequests, 2, 'both held on the wake path');
  assert.equal(toWakePath(wsApp.id), false, 'the routes went back to the app');
  // Frames both ways, answered by the container itself (its hostname).
  let reply = nextMessage(a);
  a.send('hello');
  assert.equal(await reply, `${ids[0]} hello`);
  reply = nextMessage(b);
  b.send('there');
  assert.equal(await reply, `${ids[0]} there`);
  reply = nextMessage(a);
  a.send('again');
  assert.equal(await reply, `${ids[0]} again`);
  // The app closes one, the client the other; the app ends up holding none.
  const bClosed = closed(b);
  b.send('bye');
  assert.equal(await bClosed, 4001, 'the close the app sent reached the client');
  const aClosed = closed(a);
  a.close(1000);
  assert.equal(await aClosed, 1000, "the app's answer to the client's close reached the client");
  await poll(
    'the app to hold no socket any more',
    async () => ((await lab!.https(host, '/conns')).body === '0' ? true : null),
    30_000,
    100,
  );
});

test('an upgrade whose wake fails is answered 503 with Retry-After on its socket; the next one after the app can start is connected', async (t) => {
  if (!(await ready(t)) || !wsApp) return;
  const host = `${wsApp.name}.${BASE}`;
  const sleeper = server!.env.sleeper;
  const [id] = await runningIds(wsApp.name);
  await run('docker', ['exec', id!, 'node', '-e', "require('fs').writeFileSync('/tmp/hold', '')"]);
  assert.deepEqual(await sleeper.check(later(60)), [wsApp.id]);
  const config = server!.env.config as { wakeTimeoutSeconds: number };
  const saved = config.wakeTimeoutSeconds;
  // The container starts but never listens: the wake's gate gives up at the timeout.
  config.wakeTimeoutSeconds = 1;
  let refused: Upgrade;
  try {
    refused = await throughCaddy(host);
  } finally {
    config.wakeTimeoutSeconds = saved;
  }
  if ('ws' in refused) assert.fail('the upgrade was connected to an app that does not listen');
  assert.equal(refused.status, 503, refused.body);
  assert.equal(refused.headers['retry-after'], '5');
  assert.equal(JSON.parse(refused.body).code, 'service_unavailable');
  assert.equal(toWakePath(wsApp.id), true, 'still asleep for the proxy: the next request wakes it again');

  await run('docker', ['exec', id!, 'node', '-e', "require('fs').rmSync('/tmp/hold')"]);
  const s = opened(await throughCaddy(host));
  const reply = nextMessage(s);
  s.send('up');
  assert.equal(await reply, `${id!.slice(0, 12)} up`);
  const gone = closed(s);
  s.close(1000);
  await gone;
  assert.equal(await status(wsApp.id), 'running');
});

test('an upgrade with the wake header is refused 403 unless it comes from a trusted proxy with the secret: it wakes nothing and reaches no container', async (t) => {
  if (!(await ready(t)) || !wsApp) return;
  const sleeper = server!.env.sleeper;
  assert.deepEqual(await sleeper.check(later(60)), [wsApp.id]);
  const before = { ...sleeper.counts };
  const direct = `ws://127.0.0.1:${server!.running.port}/echo`;
  const real = `${server!.env.edge.wakeToken} ${wsApp.id} app 8080`;
  const tries: Array<[string, WebSocket.ClientOptions]> = [
    ['a made-up secret from a trusted address', { headers: { 'x-svc-wake': `bad ${wsApp.id} app 8080` } }],
    [
      'the real secret from an address not in SVC_TRUSTED_PROXIES',
      {
        headers: { 'x-svc-wake': real },
        localAddress: '127.0.0.2',
      },
    ],
    ['an empty header', { headers: { 'x-svc-wake': '' } }],
  ];
  for (const [what, opts] of tries) {
    const u = await upgrade(direct, opts);
    if ('ws' in u) assert.fail(`${what}: connected`);
    assert.equal(u.status, 403, `${what}: ${u.body}`);
    assert.equal(JSON.parse(u.body).code, 'forbidden', what);
  }
  assert.equal(sleeper.counts.wakes, before.wakes, 'nothing woke');
  assert.equal(sleeper.counts.wakeRequests, before.wakeRequests, 'nothing was held');
  assert.deepEqual(await runningIds(wsApp.name), []);
  assert.equal(await status(wsApp.id), 'sleeping');
  // The same header from a trusted address is what Caddy sends: it is connected (the refusals above
  // were for what they lacked).
  const s = opened(await upgrade(direct, { headers: { 'x-svc-wake': real } }));
  const [id] = await runningIds(wsApp.name);
  const reply = nextMessage(s);
  s.send('trusted');
  assert.equal(await reply, `${id} trusted`);
  s.close(1000);
  await closed(s);
});
