// The edge end to end, over the HTTP API only: a real control plane (its own server), real Caddy
// driven through its admin API, Pebble issuing over HTTP-01, challtestsrv as DNS, and apps
// deployed on the real Docker engine. Visitors fetch through Caddy with real TLS.
// The tests in this file run in order and share one lab, one server and two deployed apps.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Agent } from 'node:https';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { needEdge, startEdgeLab, type EdgeLab, type FetchResult } from '../_support/edge.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, ADMIN, type TestServer, type Client } from '../_support/server.js';
import { issue } from '../_support/pki.js';
import { poll } from '../_support/wait.js';
import { waitStatus, cleanupApp } from '../engine/_deploy.js';
import { appName } from '../engine/_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';

const run = promisify(execFile);
const IMAGE = `svc-w13/edge-web:${process.pid}`;
const BASE = 'w13.test';

let lab: EdgeLab | null = null;
let server: TestServer | null = null;
let c: Client;
const apps: Array<{ id: string; name: string }> = [];
let shopDomainId = '';

after(async () => {
  if (server) {
    for (const a of apps) await cleanupApp(server.env.engine, a.name);
    await server.stop();
  }
  await lab?.stop();
  await run('docker', ['image', 'rm', '-f', IMAGE]).catch(() => {});
});

/** Serves its container's hostname (the first 12 hex digits of its id) at /, and /cgi-bin/slow after 150 ms. */
async function buildImage(): Promise<void> {
  const dockerfile = [
    `FROM ${BASE_IMAGE}`,
    `RUN mkdir -p /www/cgi-bin && printf '#!/bin/sh\\nusleep 150000\\necho "Content-Type: text/plain"\\necho\\necho slow\\n' > /www/cgi-bin/slow && chmod +x /www/cgi-bin/slow`,
    'EXPOSE 8080',
    `CMD ["sh", "-c", "trap 'exit 0' TERM; hostname > /www/index.html; httpd -f -p 8080 -h /www & wait"]`,
  ].join('\n');
  // No network for the RUN step: it needs none, and the build then does not depend on the engine's default bridge.
  await run(
    'sh',
    [
      '-c',
      'printf "%s\\n" "$1" | docker build -q --network none --label svc.test=w13-edge -t "$2" -',
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
  // Kept when a later step fails: a second lab would leave the first one's processes running.
  lab ??= await startEdgeLab();
  await buildImage();
  server = await startTestServer(
    { ...lab.vars, SVC_BASE_DOMAIN: BASE },
    { edge: { checkIntervalMs: 1000, checkerTickMs: 250 } },
  );
  c = await adminClient(server);
  return true;
}

async function deployedApp(name: string): Promise<{ id: string; name: string }> {
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: IMAGE } });
  assert.equal(r.status, 201, r.text);
  const app = { id: r.body.id ?? r.body.app?.id, name };
  apps.push(app);
  const p = await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080 });
  assert.equal(p.status, 200, p.text);
  await deploy(app.id);
  return app;
}

async function deploy(appId: string): Promise<void> {
  const d = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(c, appId, d.body.deployment.id, ['succeeded']);
}

/** The short ids of the app's running containers (what the image serves at /). */
async function containerIds(name: string): Promise<string[]> {
  return (await listAppContainers(server!.env.engine, name))
    .filter((x) => x.state === 'running')
    .map((x) => x.id.slice(0, 12));
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
      const r = await lab!.https(host, path);
      return ok(r) ? r : null;
    },
    90_000,
    250,
  );
}

const issuerCn = (r: FetchResult) => String(r.cert?.issuer?.CN ?? '');

test('hostnames breaking a rule are refused with 400 naming the rule; nothing is saved', async (t) => {
  if (!(await ready(t))) return;
  const cases: Array<[unknown, string]> = [
    ['shop example.com', 'spaces'],
    ['*.example.com', 'wildcard'],
    ['https://shop.example.com/', 'slash'],
    ['shop.example.com:8443', 'colon'],
    ['me@example.com', 'at'],
    ['shop..example.com', 'empty_label'],
    [`${'a'.repeat(64)}.example.com`, 'label_length'],
    [`${'abcdefghi.'.repeat(26)}com`, 'length'],
    ['bücher.example', 'ascii'],
    ['localhost', 'single_label'],
    ['-shop.example.com', 'ldh'],
  ];
  for (const [hostname, rule] of cases) {
    const r = await c.req('POST', '/api/domains', { hostname });
    assert.equal(r.status, 400, `${hostname}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
    assert.equal(r.body.details?.[0]?.rule, rule, `${hostname}: ${r.text}`);
  }
  const puny = await c.req('POST', '/api/domains', { hostname: 'bücher.example' });
  assert.match(puny.body.error, /xn--bcher-kva\.example/, 'the refusal gives the punycode form');
  const dns = await c.req('GET', `/api/instance/dns-check?host=${encodeURIComponent('a b.example')}`);
  assert.equal(dns.status, 400);
  assert.equal(dns.body.details?.[0]?.rule, 'spaces');
  const base = await c.req('PUT', '/api/instance/base-domain', { base_domain: 'no_underscores.example' });
  assert.equal(base.status, 400);
  assert.equal(base.body.details?.[0]?.rule, 'ldh');
  assert.deepEqual(
    (await c.req('GET', '/api/domains')).body.items.filter((d: any) => !d.managed),
    [],
    'nothing was saved',
  );
});

test('a deployed app is served over HTTPS on its domain with a Pebble certificate; its automatic host is listed as managed and served too', async (t) => {
  if (!(await ready(t))) return;
  const shop = await deployedApp(appName('w13s'));

  // A service without a port cannot take a domain.
  const noPort = await c.req('POST', `/api/apps/${shop.id}/domains`, {
    hostname: 'noport.w13x.test',
    service: 'nope',
  });
  assert.equal(noPort.status, 400, noPort.text);

  const host = 'shop.w13x.test';
  const r = await c.req('POST', `/api/apps/${shop.id}/domains`, { hostname: host, service: 'app' });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.body.proxy, { synced: true });
  assert.equal(r.body.domain.hostname, host);
  assert.equal(r.body.domain.app_id, shop.id);
  shopDomainId = r.body.domain.id;
  const dup = await c.req('POST', '/api/domains', {
    hostname: 'SHOP.w13x.test.',
    app_id: shop.id,
    service: 'app',
  });
  assert.equal(dup.status, 409, 'the same name, differently written, is a duplicate');

  const ids = await containerIds(shop.name);
  const served = await until(host, (x) => x.status === 200, 'the domain served over HTTPS');
  assert.ok(
    ids.includes(served.body.trim()),
    `served by the app's container (${served.body.trim()} in ${ids.join(', ')})`,
  );
  assert.match(issuerCn(served), /Pebble/, 'certificate from the ACME CA');

  const active = await poll(
    'domain active',
    async () => {
      const d = await c.req('POST', `/api/domains/${shopDomainId}/refresh`);
      return d.body.domain?.status === 'active' ? d.body.domain : null;
    },
    60_000,
    250,
  );
  assert.equal(active.certificate.source, 'acme');
  assert.match(active.certificate.issuer, /Pebble/);
  assert.deepEqual(active.dns.addresses, ['127.0.0.1']);

  // The automatic host <app>.<base>: listed with managed: true and no id, served over HTTPS.
  const auto = `${shop.name}.${BASE}`;
  const listed = (await c.req('GET', `/api/apps/${shop.id}/domains`)).body.items;
  const managed = listed.find((d: any) => d.hostname === auto);
  assert.ok(managed, JSON.stringify(listed));
  assert.equal(managed.managed, true);
  assert.equal(managed.id, undefined);
  assert.equal(managed.service, 'app');
  const autoServed = await until(auto, (x) => x.status === 200, 'the automatic host served over HTTPS');
  assert.ok(ids.includes(autoServed.body.trim()));
  assert.match(issuerCn(autoServed), /Pebble/);
  const hub = (await c.req('GET', '/api/domains')).body;
  assert.ok(hub.items.some((d: any) => d.hostname === host && d.id === shopDomainId));
  assert.ok(hub.items.some((d: any) => d.hostname === auto && d.managed === true));
});

test('the control domain serves the API over HTTPS, and only then does the posture say so', async (t) => {
  if (!(await ready(t))) return;
  const control = `svc.${BASE}`;
  const info = await c.req('GET', '/api/instance/base-domain');
  assert.deepEqual(
    { base: info.body.base_domain, control: info.body.control_domain },
    { base: BASE, control },
  );
  const health = await until(
    control,
    (x) => x.status === 200,
    'the API over HTTPS on the control domain',
    '/api/health',
  );
  assert.match(issuerCn(health), /Pebble/);
  assert.equal(JSON.parse(health.body).status ?? 'ok', 'ok');
  const row = await poll(
    'base_domain ok',
    async () => {
      const p = await c.req('GET', '/api/security/posture');
      const r = p.body.items.find((i: any) => i.code === 'base_domain');
      return r.status === 'ok' ? r : null;
    },
    60_000,
    250,
  );
  assert.match(row.reason, new RegExp(`${control.replace(/\./g, '\\.')} is served over HTTPS`));
});

test('invitation and reset links reach the access log with their token cut out', async (t) => {
  if (!(await ready(t))) return;
  const control = `svc.${BASE}`;
  const token = `tok${randomBytes(30).toString('base64url')}`;
  const paths = [`/invite/${token}`, `/api/invitations/${token}`, `/api/invitations/${token}/accept`];
  for (const path of paths) await lab!.https(control, path);
  // A marker sent after them is logged after them: once it is in the file, so are they.
  const marker = `/api/health?marker=${token.slice(0, 8)}`;
  const log = await until(
    control,
    (r) => r.status === 200,
    'the marker through the control domain',
    marker,
  ).then(() =>
    poll(
      'the marker in the access log',
      async () => {
        const text = await readFile(lab!.accessLog, 'utf8');
        return text.includes(`marker=${token.slice(0, 8)}`) ? text : null;
      },
      30_000,
      100,
    ),
  );
  const uris = log
    .split('\n')
    .filter(Boolean)
    .map((l) => String(JSON.parse(l).request?.uri ?? ''));
  assert.ok(!log.includes(token), 'no line carries the token');
  for (const path of paths) {
    const kept = path.replace(token, '[redacted]');
    assert.ok(uris.includes(kept), `${kept} is logged`);
  }
});

test('a redirect domain answers 308 to https://<redirect_to><uri>', async (t) => {
  if (!(await ready(t))) return;
  const r = await c.req('POST', '/api/domains', {
    hostname: 'old-shop.w13x.test',
    redirect_to: 'shop.w13x.test',
  });
  assert.equal(r.status, 201, r.text);
  const moved = await until(
    'old-shop.w13x.test',
    (x) => x.status === 308,
    'the redirect over HTTPS',
    '/cart?item=7',
  );
  assert.equal(moved.headers.location, 'https://shop.w13x.test/cart?item=7');
  const plain = await lab!.http('old-shop.w13x.test', '/x');
  assert.equal(plain.status, 308);
  assert.equal(plain.headers.location, 'https://shop.w13x.test/x');
});

test('an uploaded certificate needs a step-up, is validated, served instead of ACME, and deleting it returns to ACME', async (t) => {
  if (!(await ready(t))) return;
  const shop = apps[0]!;
  const host = 'upload.w13x.test';
  const d = await c.req('POST', `/api/apps/${shop.id}/domains`, { hostname: host, service: 'app' });
  assert.equal(d.status, 201, d.text);
  const id = d.body.domain.id;
  const good = await issue(lab!.ca, [host], { file: 'w13-upload' });
  const wrongHost = await issue(lab!.ca, ['other.w13x.test'], { file: 'w13-other' });
  const body = { cert_pem: good.certPem, key_pem: good.keyPem };

  const noStepUp = await c.req('POST', `/api/domains/${id}/certificate`, body);
  assert.equal(noStepUp.status, 403);
  assert.equal(noStepUp.body.code, 'step_up_required');
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);

  const bad = await c.req('POST', `/api/domains/${id}/certificate`, {
    cert_pem: wrongHost.certPem,
    key_pem: wrongHost.keyPem,
  });
  assert.equal(bad.status, 400, bad.text);
  const mismatch = await c.req('POST', `/api/domains/${id}/certificate`, {
    cert_pem: good.certPem,
    key_pem: wrongHost.keyPem,
  });
  assert.equal(mismatch.status, 400, mismatch.text);
  assert.equal(
    (await c.req('GET', `/api/domains/${id}`)).body.domain.certificate?.source === 'uploaded',
    false,
    'nothing stored',
  );

  const up = await c.req('POST', `/api/domains/${id}/certificate`, body);
  assert.equal(up.status, 200, up.text);
  assert.equal(up.body.domain.certificate.source, 'uploaded');
  assert.ok(!JSON.stringify(up.body).includes('PRIVATE KEY'), 'the key never comes back');
  const served = await until(
    host,
    (x) => x.status === 200 && issuerCn(x) === 'svc test pebble CA',
    'the uploaded certificate served',
  );
  assert.ok((await containerIds(shop.name)).includes(served.body.trim()));

  const del = await c.req('DELETE', `/api/domains/${id}/certificate`);
  assert.equal(del.status, 200, del.text);
  await until(host, (x) => x.status === 200 && /Pebble/.test(issuerCn(x)), 'back to ACME');
});

test('reassigning a domain to another app moves its traffic there', async (t) => {
  if (!(await ready(t))) return;
  const blog = await deployedApp(appName('w13b'));
  const blogIds = await containerIds(blog.name);
  const r = await c.req('PATCH', `/api/domains/${shopDomainId}`, { app_id: blog.id, service: 'app' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.domain.app_id, blog.id);
  assert.deepEqual(r.body.proxy, { synced: true });
  const served = await until(
    'shop.w13x.test',
    (x) => x.status === 200 && blogIds.includes(x.body.trim()),
    'the other app serving the domain',
  );
  assert.match(issuerCn(served), /Pebble/);
  // And back, for the tests that follow.
  const back = await c.req('PATCH', `/api/domains/${shopDomainId}`, { app_id: apps[0]!.id, service: 'app' });
  assert.equal(back.status, 200, back.text);
});

test('a stopped app answers 503 at once (not 502 after dialing dead addresses); started again, it serves; neither loads a config', async (t) => {
  if (!(await ready(t))) return;
  const blog = apps[1]!;
  const auto = `${blog.name}.${BASE}`;
  await until(auto, (x) => x.status === 200, 'the automatic host served');
  const loads = [server!.env.edge.proxy.state().loads, lab!.caddyLoads()];
  const stop = await c.req('POST', `/api/apps/${blog.id}/stop`);
  assert.equal(stop.status, 200, stop.text);
  assert.deepEqual(await containerIds(blog.name), [], 'nothing runs');
  // The stop answered after Caddy took the change: the very next request sees it. Caddy's lookup
  // finds no container and hands the request to the control plane, which answers for the app.
  const stopped = await lab!.https(auto, '/');
  assert.equal(stopped.status, 503, `${stopped.status} ${stopped.body}`);
  assert.match(stopped.body, /no running container/);
  assert.equal(JSON.parse(stopped.body).code, 'service_unavailable');
  assert.equal(stopped.headers['retry-after'], '5');
  const start = await c.req('POST', `/api/apps/${blog.id}/start`);
  assert.equal(start.status, 200, start.text);
  const ids = await containerIds(blog.name);
  const back = await lab!.https(auto, '/');
  assert.equal(back.status, 200, `${back.status} ${back.body}`);
  assert.ok(ids.includes(back.body.trim()), 'served by the started container');
  assert.deepEqual([server!.env.edge.proxy.state().loads, lab!.caddyLoads()], loads, 'no config loaded');
});

test('a redeploy while clients loop through Caddy (new and kept-alive connections) loses no request and loads no config', async (t) => {
  if (!(await ready(t))) return;
  const shop = apps[0]!;
  const host = 'shop.w13x.test';
  const before = await containerIds(shop.name);
  await until(
    host,
    (x) => x.status === 200 && before.includes(x.body.trim()),
    'the domain back on the first app',
  );
  const stats = { ok: 0, failed: [] as string[], retried: 0, seen: new Set<string>() };
  let stop = false;
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
  // A reloaded server closes its idle kept-alive connections; a request racing that close finds
  // the socket gone before any byte of answer. Clients retry such a request once (browsers and
  // HTTP libraries do, RFC 9112 section 9.3.1); it is counted, and a second failure is a loss.
  const once = async (agent: Agent | false): Promise<FetchResult> => {
    try {
      return await lab!.https(host, '/', { agent });
    } catch (e) {
      // A fresh connection accepted in the instant Caddy swaps its config can be closed by the
      // outgoing server before the request is read (a reset, no answer): retried once as well.
      const err = e as { reused?: boolean; code?: string; message?: string };
      if (!err.reused && err.code !== 'ECONNRESET' && !/socket hang up/.test(String(err.message))) throw e;
      stats.retried++;
      // On a new connection: the other pooled ones were closed by the same reload.
      return lab!.https(host, '/', { agent: false });
    }
  };
  const loop = async (agent: Agent | false) => {
    while (!stop) {
      try {
        const r = await once(agent);
        if (r.status === 200) {
          stats.ok++;
          stats.seen.add(r.body.trim());
        } else stats.failed.push(`${r.status} ${r.body.slice(0, 80)}`);
      } catch (e) {
        stats.failed.push(String(e));
      }
    }
  };
  const loops = [loop(false), loop(keepAlive), loop(keepAlive)];
  let fresh: string[] = [];
  const loads = [server!.env.edge.proxy.state().loads, lab!.caddyLoads()];
  try {
    await poll('traffic flowing', () => stats.ok > 20, 30_000, 50);
    await deploy(shop.id);
    // The old container may still be draining when the deployment reports success.
    fresh = (await containerIds(shop.name)).filter((x) => !before.includes(x));
    assert.ok(fresh.length > 0, 'a new container runs');
    await poll('traffic on the new container', () => fresh.some((x) => stats.seen.has(x)), 30_000, 50);
    await poll(
      'the old container retired',
      async () => (await containerIds(shop.name)).every((x) => !before.includes(x)),
      60_000,
      200,
    );
    // A few more rounds after the old one stopped: nothing still points at it.
    const n = stats.ok;
    await poll('requests after the retirement', () => stats.ok > n + 20, 30_000, 50);
  } finally {
    stop = true;
    await Promise.all(loops);
    keepAlive.destroy();
  }
  assert.deepEqual(
    stats.failed,
    [],
    `${stats.failed.length} of ${stats.ok + stats.failed.length} requests failed (${stats.retried} retried once after a connection closed before any answer)`,
  );
  assert.ok(
    before.some((x) => stats.seen.has(x)) && fresh.some((x) => stats.seen.has(x)),
    'served by the old, then the new container',
  );
  assert.equal(stats.retried, 0, 'no connection was closed under a client');
  assert.deepEqual([server!.env.edge.proxy.state().loads, lab!.caddyLoads()], loads, 'no config loaded');
  t.diagnostic(`redeploy under load: ${stats.ok} requests, none lost`);
  const logs = await c.req('GET', `/api/apps/${shop.id}/deployments`);
  const last = logs.body.items[0];
  const lines = (await c.req('GET', `/api/apps/${shop.id}/deployments/${last.id}/logs`)).body.items.map(
    (l: any) => l.line,
  );
  assert.ok(
    lines.some((l: string) => /proxy: routes switched to the new containers/.test(l)),
    lines.join('\n'),
  );
});

test('a rollback takes the same path: the route follows its containers and no config is loaded', async (t) => {
  if (!(await ready(t))) return;
  const shop = apps[0]!;
  const host = 'shop.w13x.test';
  const items = (await c.req('GET', `/api/apps/${shop.id}/deployments`)).body.items;
  const first = items.at(-1);
  const before = await containerIds(shop.name);
  const loads = [server!.env.edge.proxy.state().loads, lab!.caddyLoads()];
  const rb = await c.req('POST', `/api/apps/${shop.id}/deployments/${first.id}/rollback`);
  assert.equal(rb.status, 202, rb.text);
  await waitStatus(c, shop.id, rb.body.deployment.id, ['succeeded']);
  const fresh = (await containerIds(shop.name)).filter((x) => !before.includes(x));
  assert.ok(fresh.length > 0, 'the rollback runs new containers');
  const r = await lab!.https(host, '/');
  assert.equal(r.status, 200);
  assert.ok(
    fresh.includes(r.body.trim()),
    `served by the rollback's container (${r.body.trim()} in ${fresh.join(', ')})`,
  );
  assert.deepEqual([server!.env.edge.proxy.state().loads, lab!.caddyLoads()], loads, 'no config loaded');
  const lines = (
    await c.req('GET', `/api/apps/${shop.id}/deployments/${rb.body.deployment.id}/logs`)
  ).body.items.map((l: any) => l.line);
  assert.ok(
    lines.some((l: string) => /proxy: routes switched to the new containers/.test(l)),
    lines.join('\n'),
  );
});

test('metrics count the requests sent through Caddy, with percentiles, in the contract shape', async (t) => {
  if (!(await ready(t))) return;
  const shop = apps[0]!;
  const host = 'shop.w13x.test';
  const total = async () =>
    (await c.req('GET', `/api/apps/${shop.id}/metrics?range=1h`)).body.points.reduce(
      (n: number, p: any) => n + p.requests,
      0,
    );
  // Earlier requests may still be on their way into the access log. A marker request sent after
  // all of them is logged after them: once the tailer has seen it, they are all counted (it too).
  const marker = `/settled-${Date.now()}`;
  let markerSeen = false;
  const unsubscribe = server!.env.tailer.subscribe((e) => {
    if (e.path === marker) markerSeen = true;
  });
  assert.equal((await lab!.https(host, marker)).status, 404, 'busybox httpd has no such file');
  await poll(
    'the marker request in the access log',
    async () => {
      await server!.env.tailer.catchUp();
      return markerSeen;
    },
    60_000,
    50,
  );
  unsubscribe();
  const base = await total();
  // A fresh 10 s bucket, so the loop of the previous test shares none with these requests.
  const bucket = Math.floor(Date.now() / 10_000);
  await poll('the next 10 s bucket', () => Math.floor(Date.now() / 10_000) > bucket, 15_000, 50);
  for (let i = 0; i < 30; i++) assert.equal((await lab!.https(host, `/?i=${i}`)).status, 200);
  for (let i = 0; i < 5; i++) assert.equal((await lab!.https(host, '/cgi-bin/slow')).status, 200);
  await poll(
    '35 requests counted',
    async () => {
      await server!.env.tailer.catchUp();
      return (await total()) - base >= 35;
    },
    60_000,
    200,
  );
  const m = (await c.req('GET', `/api/apps/${shop.id}/metrics?range=1h`)).body;
  assert.equal(m.range, '1h');
  assert.equal(m.step_seconds, 10);
  assert.equal(m.points.length, 360);
  assert.equal(
    m.points.reduce((n: number, p: any) => n + p.requests, 0) - base,
    35,
    'exactly the requests sent',
  );
  const ts = m.points.map((p: any) => Date.parse(p.t));
  assert.ok(
    ts.every((x: number, i: number) => i === 0 || x - ts[i - 1] === 10_000),
    'oldest first, one step apart',
  );
  assert.ok(
    m.points.some((p: any) => p.requests === 0 && p.p99_ms === 0),
    'gaps are zero-filled',
  );
  const busy = m.points.filter((p: any) => p.requests > 0);
  assert.ok(
    Math.max(...busy.map((p: any) => p.p99_ms)) >= 100,
    `the slow requests show in p99: ${JSON.stringify(busy)}`,
  );
  assert.ok(busy.every((p: any) => p.p50_ms <= p.p95_ms && p.p95_ms <= p.p99_ms));
  assert.ok(m.points.reduce((n: number, p: any) => n + p.bytes_out, 0) > 0);
  const svc = (await c.req('GET', `/api/apps/${shop.id}/metrics?range=1h&service=app`)).body;
  assert.equal(
    svc.points.reduce((n: number, p: any) => n + p.requests, 0),
    m.points.reduce((n: number, p: any) => n + p.requests, 0),
  );

  for (const [range, step] of [
    ['6h', 60],
    ['24h', 300],
    ['7d', 3600],
    ['30d', 7200],
  ] as const) {
    const r = (await c.req('GET', `/api/apps/${shop.id}/metrics?range=${range}`)).body;
    assert.equal(r.step_seconds, step, range);
    assert.ok(r.points.length <= 500 && r.points.length > 0, range);
  }
  const hostM = (await c.req('GET', '/api/host/metrics?range=1h')).body;
  assert.equal(hostM.points.length, 360);
  assert.ok(hostM.vitals.length <= 360);
  assert.ok(
    hostM.vitals.every((v: any) => v.mem_total_bytes > 0),
    'a step without a sample is absent, never zeros',
  );
  assert.ok(
    hostM.points.reduce((n: number, p: any) => n + p.requests, 0) >= 35,
    'host-wide counts include the app',
  );
  await poll(
    'a vitals sample',
    async () =>
      (await c.req('GET', '/api/host/metrics?range=1h')).body.vitals.some((v: any) => v.mem_total_bytes > 0),
    30_000,
    500,
  );
  for (const bad of ['2h', '1H', 'all']) {
    const r = await c.req('GET', `/api/apps/${shop.id}/metrics?range=${bad}`);
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.code, 'bad_request');
    assert.match(r.body.error, /1h, 6h, 24h, 7d, 30d/);
    assert.equal((await c.req('GET', `/api/host/metrics?range=${bad}`)).status, 400);
  }
});

test('deleting a domain stops serving it', async (t) => {
  if (!(await ready(t))) return;
  const r = await c.req('DELETE', `/api/domains/${shopDomainId}`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.proxy, { synced: true });
  assert.equal((await c.req('GET', `/api/domains/${shopDomainId}`)).status, 404);
  const gone = await lab!.https('shop.w13x.test').then(
    (x) => `HTTP ${x.status}`,
    (e: Error) => `error ${e.message}`,
  );
  assert.ok(!gone.startsWith('HTTP 200'), `no longer served (${gone})`);
  const cfg = JSON.stringify(await lab!.admin('/config/apps/http'));
  assert.ok(!cfg.includes(`svc-route-${shopDomainId}`), 'its route is gone from Caddy');
  assert.ok(
    !cfg.includes('"shop.w13x.test"'),
    'no route matches the name any more (the redirect only points at it)',
  );
});

test('deleting an app takes its automatic host out of Caddy before the delete answers', async (t) => {
  if (!(await ready(t))) return;
  const gone = await deployedApp(appName('w13g'));
  const auto = `${gone.name}.${BASE}`;
  await until(auto, (x) => x.status === 200, 'the automatic host served');
  const r = await c.req('DELETE', `/api/apps/${gone.id}`);
  assert.ok(r.status === 200 || r.status === 204, r.text);
  // Read at once: the periodic check (1 s here) must not be what removes it.
  const cfg = JSON.stringify(await lab!.admin('/config/apps/http'));
  assert.ok(!cfg.includes(`"${auto}"`), `no route matches ${auto} any more`);
});
