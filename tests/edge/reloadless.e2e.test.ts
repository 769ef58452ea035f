// The proxy without reloads, end to end: a real control plane (its own server), real Caddy driven
// through its admin API, Pebble, apps on the real Docker engine, WebSockets through Caddy with real
// TLS. Caddy 2.6 closes every WebSocket open through it when it loads a config, so "no load" is
// checked twice: the control plane's count and Caddy's own log. The tests run in order and share
// one server and its apps.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type WebSocket from 'ws';
import { needEdge, startEdgeLab, type EdgeLab, type FetchResult } from '../_support/edge.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, apiToken, type TestServer, type Client } from '../_support/server.js';
import { poll } from '../_support/wait.js';
import { waitStatus, cleanupApp } from '../engine/_deploy.js';
import { appName } from '../engine/_helpers.js';
import { needStackImages } from '../_support/stackimages.js';
import { buildEchoImage, closed, nextMessage, opened, wsThroughCaddy } from '../_support/wsapp.js';
import { listAppContainers } from '#lib/docker/index.js';

const run = promisify(execFile);
const IMAGE = `svc-noreload/web:${process.pid}`;
const WS_IMAGE = `svc-noreload/ws:${process.pid}`;
const BASE = 'noreload.test';
const CONTROL = `svc.${BASE}`;

let lab: EdgeLab | null = null;
let server: TestServer | null = null;
let c: Client;
let token = '';
const apps: Array<{ id: string; name: string }> = [];

after(async () => {
  if (server) {
    for (const a of apps) await cleanupApp(server.env.engine, a.name);
    await server.stop();
  }
  await lab?.stop();
  await run('docker', ['image', 'rm', '-f', IMAGE, WS_IMAGE]).catch(() => {});
});

/** Serves its container's hostname (the first 12 hex digits of its id) at /. */
async function buildWebImage(): Promise<void> {
  const dockerfile = [
    `FROM ${BASE_IMAGE}`,
    'EXPOSE 8080',
    `CMD ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www; hostname > /www/index.html; httpd -f -p 8080 -h /www & wait"]`,
  ].join('\n');
  await run(
    'sh',
    [
      '-c',
      'printf "%s\\n" "$1" | docker build -q --network none --label svc.test=noreload -t "$2" -',
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
  const images = await needStackImages(t);
  if (!images) return false;
  lab ??= await startEdgeLab();
  await buildWebImage();
  await buildEchoImage(WS_IMAGE, images.node, 'noreload');
  server = await startTestServer(
    { ...lab.vars, SVC_BASE_DOMAIN: BASE },
    { edge: { checkIntervalMs: 1000, checkerTickMs: 250 }, sleep: { intervalMs: 3_600_000 } },
  );
  c = await adminClient(server);
  token = await apiToken(c, 'noreload');
  return true;
}

async function deploy(appId: string): Promise<string> {
  const d = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(c, appId, d.body.deployment.id, ['succeeded']);
  return d.body.deployment.id;
}

async function deployedApp(prefix: string, image: string): Promise<{ id: string; name: string }> {
  const name = appName(prefix);
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image } });
  assert.equal(r.status, 201, r.text);
  const app = { id: r.body.app.id, name };
  apps.push(app);
  assert.equal((await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080 })).status, 200);
  await deploy(app.id);
  await until(`${name}.${BASE}`, (x) => x.status === 200, 'the app served through Caddy');
  return app;
}

function until(
  host: string,
  ok: (r: FetchResult) => boolean,
  what: string,
  path = '/',
): Promise<FetchResult> {
  return poll(
    what,
    async () => {
      const r = await lab!.https(host, path).catch(() => null);
      return r && ok(r) ? r : null;
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

/** Config loads so far, as the control plane counts them and as Caddy's log shows them. */
const loads = () => [server!.env.edge.proxy.state().loads, lab!.caddyLoads()];

/** Waits until no config has been loaded for 3 s: the checker has seen every new host's certificate. */
async function quiet(): Promise<void> {
  const end = Date.now() + 90_000;
  let last = JSON.stringify(loads());
  for (;;) {
    await new Promise((r) => setTimeout(r, 3000));
    const now = JSON.stringify(loads());
    if (now === last) return;
    if (Date.now() > end) throw new Error('Caddy kept loading configs');
    last = now;
  }
}

/** Sends `text`, resolves with the container that echoed it; fails when the socket closes or stays silent. */
async function echoes(s: WebSocket, text: string): Promise<string> {
  if (s.readyState !== s.OPEN) assert.fail(`the socket is not open (state ${s.readyState})`);
  let timer: NodeJS.Timeout | undefined;
  const reply = Promise.race([
    nextMessage(s),
    new Promise<never>((_, reject) => {
      s.once('close', (code) =>
        reject(new Error(`the socket closed (${code}) instead of echoing "${text}"`)),
      );
      timer = setTimeout(() => reject(new Error(`no echo of "${text}" in 30 s`)), 30_000);
    }),
  ]).finally(() => clearTimeout(timer));
  s.send(text);
  const r = await reply;
  assert.ok(r.endsWith(` ${text}`), r);
  return r.slice(0, -text.length - 1);
}

async function deployLines(appId: string, deploymentId: string): Promise<string[]> {
  const r = await c.req('GET', `/api/apps/${appId}/deployments/${deploymentId}/logs`);
  return r.body.items.map((l: { line: string }) => l.line);
}

let x: { id: string; name: string };

test("a WebSocket to one app and the dashboard's own WebSocket on the control domain stay open across deploys, a rollback, a restart, a stop and start, and sleep and wake of another app; none of them loads a config", async (t) => {
  if (!(await ready(t))) return;
  x = await deployedApp('nrx', WS_IMAGE);
  const y = await deployedApp('nry', IMAGE);
  const yHost = `${y.name}.${BASE}`;
  await until(CONTROL, (r) => r.status === 200, 'the control domain served', '/api/health');
  // Let the checker's view of every host settle (each certificate seen changes the plan once).
  await poll(
    'every host active',
    async () => {
      const items = (await c.req('GET', '/api/domains')).body.items as Array<{ status: string }>;
      return items.every((d) => d.status === 'active') ? true : null;
    },
    60_000,
    250,
  );
  await quiet();

  const app = opened(await wsThroughCaddy(lab!, `${x.name}.${BASE}`));
  const dash = opened(await wsThroughCaddy(lab!, CONTROL, '/api/ws', { authorization: `Bearer ${token}` }));
  const closes: string[] = [];
  app.once('close', (code) => closes.push(`app ${code}`));
  dash.once('close', (code) => closes.push(`dashboard ${code}`));
  const events: Array<{ type: string; app_id?: string }> = [];
  dash.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.type === 'event' && m.topic === 'apps') events.push(m.data);
  });
  dash.send(JSON.stringify({ type: 'subscribe', topic: 'apps' }));
  const xId = await echoes(app, 'before');
  const before = loads();

  const steps: Array<[string, () => Promise<unknown>]> = [
    ['deploy', () => deploy(y.id)],
    ['deploy again', () => deploy(y.id)],
    [
      'rollback',
      async () => {
        const first = (await c.req('GET', `/api/apps/${y.id}/deployments`)).body.items.at(-1);
        const rb = await c.req('POST', `/api/apps/${y.id}/deployments/${first.id}/rollback`);
        assert.equal(rb.status, 202, rb.text);
        await waitStatus(c, y.id, rb.body.deployment.id, ['succeeded']);
      },
    ],
    ['restart', async () => assert.equal((await c.req('POST', `/api/apps/${y.id}/restart`)).status, 200)],
    ['stop', async () => assert.equal((await c.req('POST', `/api/apps/${y.id}/stop`)).status, 200)],
    ['start', async () => assert.equal((await c.req('POST', `/api/apps/${y.id}/start`)).status, 200)],
    [
      'sleep',
      async () => {
        assert.equal((await c.req('PATCH', `/api/apps/${y.id}`, { sleep_after_minutes: 5 })).status, 200);
        assert.deepEqual(await server!.env.sleeper.check(Date.now() + 3_600_000), [y.id]);
      },
    ],
    ['wake', async () => assert.equal((await lab!.https(yHost, '/')).status, 200)],
  ];
  for (const [what, step] of steps) {
    await step();
    assert.deepEqual(
      closes,
      [],
      `after the ${what}: no socket closed (last load: ${server!.env.edge.proxy.state().last_load_reason})`,
    );
    assert.equal(
      await echoes(app, what.replace(' ', '-')),
      xId,
      `after the ${what}: the same container answers`,
    );
    assert.deepEqual(
      loads(),
      before,
      `the ${what} loaded no config (last load: ${server!.env.edge.proxy.state().last_load_reason})`,
    );
  }
  // The dashboard's socket kept delivering: it saw the other app's sleep and wake.
  await poll(
    'the woken event on the dashboard socket',
    () => (events.some((e) => e.type === 'woken' && e.app_id === y.id) ? true : null),
    10_000,
    50,
  );
  assert.ok(events.some((e) => e.type === 'sleeping' && e.app_id === y.id));
  assert.equal((await lab!.https(yHost, '/')).status, 200);
  app.close(1000);
  dash.close(1000);
});

test('draining: a WebSocket opened before its own app is redeployed stays on the old container while new connections go to the new one; the old container goes when it closes, or when drain_s has passed', async (t) => {
  if (!(await ready(t)) || !x) return;
  const host = `${x.name}.${BASE}`;
  const set = await c.req('PATCH', `/api/apps/${x.id}/services/app`, { drain_s: 600 });
  assert.equal(set.status, 200, set.text);
  assert.equal(set.body.drain_s, 600);
  const before = loads();
  const [oldId] = await runningIds(x.name);
  const held = opened(await wsThroughCaddy(lab!, host));
  assert.equal(await echoes(held, 'held'), oldId);

  const first = await deploy(x.id);
  // Reported succeeded: from the switch on, new connections and requests reach the new container.
  const fresh = (await runningIds(x.name)).filter((id) => id !== oldId);
  assert.equal(fresh.length, 1, 'one new container');
  const next = opened(await wsThroughCaddy(lab!, host));
  assert.equal(await echoes(next, 'new'), fresh[0]);
  assert.equal((await lab!.https(host, '/')).body.trim(), fresh[0]);
  // The one opened before is still served by the old container, which keeps running for it.
  assert.equal(await echoes(held, 'still'), oldId);
  assert.ok((await runningIds(x.name)).includes(oldId!), 'the old container drains');
  // Its last connection closes: the old container goes long before its 600 s are up.
  held.close(1000);
  await poll(
    'the old container retired once its connection closed',
    async () => ((await runningIds(x.name)).includes(oldId!) ? null : true),
    60_000,
    200,
  );
  assert.ok(
    (await deployLines(x.id, first)).some((l) => /drained \(its connections ended/.test(l)),
    'the log says why it went',
  );

  // With drain_s 1, a connection that stays open is closed once that second has passed.
  assert.equal((await c.req('PATCH', `/api/apps/${x.id}/services/app`, { drain_s: 1 })).body.drain_s, 1);
  const gone = closed(next);
  const second = await deploy(x.id);
  await gone;
  await poll(
    'the log line of the closed connection',
    async () =>
      (await deployLines(x.id, second)).some((l) => /still had 1 open connection .*\(drain_s 1\)/.test(l))
        ? true
        : null,
    30_000,
    200,
  );
  assert.deepEqual(loads(), before, 'no config loaded by either redeploy');
});
