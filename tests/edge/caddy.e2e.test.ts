// The edge against real components: Caddy (its own process, driven only through its admin API),
// Pebble issuing over HTTP-01, challtestsrv as DNS. Visitors fetch through Caddy with real TLS,
// trusting Pebble's root. The upstream is a small HTTP server on loopback standing in for an app
// container (routing to containers comes with the deployment pipeline's hook).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { Agent } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Services } from '#lib/http/handler.js';
import { insertApp, patchServiceSettings } from '#lib/apps/store.js';
import {
  addDomain,
  getDomain,
  refreshDomain,
  removeCertificate,
  removeDomain,
  uploadCertificate,
} from '#lib/proxy/domains.js';
import { setUpstreams, switchUpstreams } from '#lib/proxy/upstreams-store.js';
import { queryRequests } from '#lib/series/query.js';
import { createDnsChecker } from '#lib/domains/dns.js';
import { HttpError } from '#lib/http/errors.js';
import { labEnv, labPerFile, type EdgeLab, type FetchResult } from '../_support/edge.js';
import { freePort } from '../_support/net.js';
import { issue } from '../_support/pki.js';
import { poll } from '../_support/wait.js';

const { theLab, cleanups } = labPerFile();

/**
 * A stand-in for an app container: answers "hello from <name>"; /slow takes 120 ms. On `host`
 * (127.0.0.1 by default; any 127.x address works without setup, so two stand-ins can share a port
 * as two containers do) and `port` (0: any).
 */
async function upstream(
  name: string,
  host = '127.0.0.1',
  port = 0,
): Promise<{ server: Server; port: number; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    const reply = () => res.end(`hello from ${name} ${req.headers.host} ${req.url}`);
    if (req.url?.startsWith('/slow')) setTimeout(reply, 120);
    else reply();
  });
  await new Promise<void>((r) => server.listen(port, host, r));
  cleanups.push(
    () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(r);
      }),
  );
  return { server, port: (server.address() as AddressInfo).port, hits: () => hits };
}

async function appWithService(env: Services, name: string, port: number): Promise<string> {
  const app = await insertApp(env.db, name, { type: 'image', image: 'svc-test/busybox:latest' });
  await patchServiceSettings(env.db, app.id, 'web', { port });
  await setUpstreams(env.db, app.id, 'web', ['127.0.0.1']);
  return app.id;
}

/** Polls an HTTPS fetch until `ok` holds; connection errors while a certificate is issued count as "not yet". */
function until(
  l: EdgeLab,
  host: string,
  ok: (r: FetchResult) => boolean,
  what: string,
  path = '/',
): Promise<FetchResult> {
  return poll(
    what,
    async () => {
      const r = await l.https(host, path);
      return ok(r) ? r : null;
    },
    60_000,
    200,
  );
}

const issuerCn = (r: FetchResult) => String(r.cert?.issuer?.CN ?? '');

test('a domain is served over HTTPS with a Pebble certificate; HTTP redirects once it is served; requests are counted with percentiles', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  env.series.start(env.tailer);
  env.tailer.start();
  const up = await upstream('shop');
  const appId = await appWithService(env, 'shop', up.port);

  const host = 'shop.example.com';
  const created = await addDomain(env, { hostname: host, app_id: appId, service: 'web' });
  assert.deepEqual(created.proxy, { synced: true });
  assert.equal(created.domain.hostname, host);
  assert.ok(['issuing', 'active'].includes(created.domain.status), created.domain.status_detail);
  assert.deepEqual(created.domain.dns?.addresses, ['127.0.0.1']);

  const r = await until(l, host, (x) => x.status === 200, 'the domain served over HTTPS', '/hello?x=1');
  assert.equal(r.body, `hello from shop ${host} /hello?x=1`);
  assert.match(issuerCn(r), /Pebble/, 'the certificate comes from the ACME CA, not `tls internal`');

  const active = await poll(
    'domain active',
    async () => {
      const d = (await refreshDomain(env, created.domain.id)).domain;
      return d.status === 'active' ? d : null;
    },
    30_000,
    200,
  );
  assert.equal(active.certificate?.source, 'acme');
  assert.match(active.certificate?.issuer ?? '', /Pebble/);
  assert.ok(Date.parse(active.certificate!.not_after) > Date.now());

  // HTTP answers ACME challenges (it just did) and otherwise sends visitors to HTTPS.
  const redirect = await poll(
    'HTTP redirects to HTTPS',
    async () => {
      const x = await l.http(host, '/a/b?c=d');
      return x.status === 308 ? x : null;
    },
    30_000,
    100,
  );
  assert.equal(redirect.headers.location, `https://${host}:${l.httpsPort}/a/b?c=d`);

  // Request metrics: 20 fast and 5 slow requests through Caddy, read back from its access log.
  const before = () =>
    queryRequests(env.db, { appId, range: '1h', now: Date.now() }).points.reduce((n, p) => n + p.requests, 0);
  // Earlier requests to this host (the polls above) may still be on their way into the log. A
  // marker request sent after all of them is logged after them: once the tailer has seen it,
  // everything before it is counted, and the marker with it.
  const marker = `/settled-${Date.now()}`;
  let markerSeen = false;
  const unsubscribe = env.tailer.subscribe((e) => {
    if (e.path === marker) markerSeen = true;
  });
  assert.equal((await l.https(host, marker)).status, 200);
  await poll(
    'the marker request in the access log',
    async () => {
      await env.tailer.catchUp();
      return markerSeen;
    },
    30_000,
    50,
  );
  unsubscribe();
  env.series.flush(true);
  const base = before();
  for (let i = 0; i < 20; i++) assert.equal((await l.https(host, `/fast/${i}`)).status, 200);
  for (let i = 0; i < 5; i++) assert.equal((await l.https(host, `/slow/${i}`)).status, 200);
  await poll(
    '25 requests counted',
    async () => {
      await env.tailer.catchUp();
      env.series.flush(true);
      return before() - base >= 25;
    },
    30_000,
    100,
  );
  const series = queryRequests(env.db, { appId, range: '1h', now: Date.now() });
  assert.equal(series.step_seconds, 10);
  assert.equal(series.points.length, 360);
  assert.equal(before() - base, 25, 'exactly the requests sent');
  const busy = series.points.filter((p) => p.requests > 0);
  // The slow requests take at least 120 ms; how much longer depends on the machine's load.
  const slowest = Math.max(...busy.map((p) => p.p99_ms));
  assert.ok(slowest >= 100, `p99 of the bucket with the slow requests is at least 100 ms, got ${slowest}`);
  assert.ok(busy.every((p) => p.p50_ms <= p.p95_ms && p.p95_ms <= p.p99_ms));
  const service = queryRequests(env.db, { appId, service: 'web', range: '1h', now: Date.now() });
  assert.equal(
    service.points.reduce((n, p) => n + p.requests, 0),
    series.points.reduce((n, p) => n + p.requests, 0),
  );
});

test('a redirect domain answers 308 to https://<redirect_to><uri> on both ports', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  const created = await addDomain(env, {
    hostname: 'old-shop.example.com',
    redirect_to: 'new-shop.example.com',
  });
  assert.equal(created.proxy.synced, true);
  const r = await until(
    l,
    'old-shop.example.com',
    (x) => x.status === 308,
    'the redirect over HTTPS',
    '/p/q?r=s',
  );
  assert.equal(r.headers.location, 'https://new-shop.example.com/p/q?r=s');
  const h = await l.http('old-shop.example.com', '/x?y=z');
  assert.equal(h.status, 308);
  assert.equal(h.headers.location, 'https://new-shop.example.com/x?y=z');
});

test('an uploaded certificate is served instead of ACME; deleting it returns to ACME', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  const up = await upstream('blog');
  const appId = await appWithService(env, 'blog', up.port);
  const host = 'blog.example.com';
  const { domain } = await addDomain(env, { hostname: host, app_id: appId, service: 'web' });
  await until(l, host, (x) => x.status === 200 && /Pebble/.test(issuerCn(x)), 'the ACME certificate first');

  // Signed by the lab's own CA (trusted by the visitor here), not by Pebble.
  const mine = await issue(l.ca, [host]);
  const r = await uploadCertificate(env, domain.id, { cert_pem: mine.certPem, key_pem: mine.keyPem });
  assert.equal(r.proxy.synced, true);
  assert.equal(r.domain.certificate?.source, 'uploaded');
  const served = await until(
    l,
    host,
    (x) => x.status === 200 && issuerCn(x) === 'svc test pebble CA',
    'the uploaded certificate served',
  );
  assert.equal(served.body, `hello from blog ${host} /`);
  const view = await poll(
    'status active with the uploaded certificate',
    async () => {
      const d = (await refreshDomain(env, domain.id)).domain;
      return d.status === 'active' ? d : null;
    },
    30_000,
    200,
  );
  assert.equal(view.certificate?.issuer, 'svc test pebble CA');

  // The key is sealed at rest, never stored in the clear.
  const row = await env.db
    .selectFrom('domain_certificates')
    .selectAll()
    .where('domain_id', '=', domain.id)
    .executeTakeFirstOrThrow();
  assert.ok(!row.key_sealed.includes('PRIVATE KEY'));
  assert.ok(row.key_sealed.startsWith('v1.'));

  await removeCertificate(env, domain.id);
  await until(l, host, (x) => x.status === 200 && /Pebble/.test(issuerCn(x)), 'back to the ACME certificate');
  assert.equal((await getDomain(env, domain.id)).certificate?.source, 'acme');
});

test('deleting a domain stops serving it; the proxy config no longer has its route', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  const up = await upstream('gone');
  const appId = await appWithService(env, 'gone', up.port);
  const host = 'gone.example.com';
  const { domain } = await addDomain(env, { hostname: host, app_id: appId, service: 'web' });
  await until(l, host, (x) => x.status === 200, 'served before the delete');
  const config = async () => JSON.stringify(await l.admin('/config/apps/http'));
  assert.match(await config(), new RegExp(`svc-route-${domain.id}`));

  const r = await removeDomain(env, domain.id);
  assert.equal(r.proxy.synced, true);
  assert.doesNotMatch(await config(), new RegExp(`svc-route-${domain.id}`));
  assert.equal((await l.http(host, '/')).status, 404);
  const hits = up.hits();
  const after = await l.https(host, '/').then(
    (x) => x.status,
    () => 'refused',
  );
  assert.notEqual(after, 200);
  assert.equal(up.hits(), hits, 'no request reached the app after the delete');
});

test('a domain whose DNS points elsewhere awaits DNS, is served over plain HTTP and never reaches the CA', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  const up = await upstream('away');
  const appId = await appWithService(env, 'away', up.port);
  const host = 'away.example.com';
  await l.setA(host, ['203.0.113.7']);
  const { domain, proxy } = await addDomain(env, { hostname: host, app_id: appId, service: 'web' });
  assert.equal(proxy.synced, true);
  assert.equal(domain.status, 'awaiting_dns');
  assert.match(domain.status_detail, /203\.0\.113\.7/);
  assert.deepEqual(domain.dns?.addresses, ['203.0.113.7']);
  assert.equal(domain.dns?.points_here, false);

  const tls = (await l.admin('/config/apps/tls')) as { certificates?: { automate?: string[] } };
  assert.ok(!(tls.certificates?.automate ?? []).includes(host), 'not handed to the CA');
  const plain = await l.http(host, '/hi');
  assert.equal(plain.status, 200, 'served over HTTP until it has a certificate');
  assert.equal(plain.body, `hello from away ${host} /hi`);
  await assert.rejects(l.https(host, '/'), 'no HTTPS without a certificate');
  assert.ok(!l.pebbleOutput().includes(host), 'Pebble never heard of the name');

  // DNS fixed: a refresh sees it, the host goes to the CA and is served over HTTPS.
  await l.setA(host, null);
  const refreshed = await refreshDomain(env, domain.id);
  assert.ok(['issuing', 'active'].includes(refreshed.domain.status), refreshed.domain.status_detail);
  await until(
    l,
    host,
    (x) => x.status === 200 && /Pebble/.test(issuerCn(x)),
    'served over HTTPS after the DNS fix',
  );
});

test('Caddy killed with SIGKILL and restarted empty serves every domain again within the check interval', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  const up = await upstream('heal');
  const appId = await appWithService(env, 'heal', up.port);
  const host = 'heal.example.com';
  await addDomain(env, { hostname: host, app_id: appId, service: 'web' });
  await until(l, host, (x) => x.status === 200, 'served before the crash');
  const loads = env.edge.proxy.state().loads;

  await l.killCaddy('SIGKILL');
  await assert.rejects(l.https(host, '/'));
  await l.startCaddy();
  // Caddy starts with no config; on a quick machine the periodic check may already have loaded
  // ours by the time we look, which it can only have done through a new load.
  const empty = await l.admin('/config/apps');
  assert.ok(empty === null || env.edge.proxy.state().loads > loads, 'Caddy came back with no apps at all');

  const r = await until(l, host, (x) => x.status === 200, 'served again without an operator');
  assert.equal(r.body, `hello from heal ${host} /`);
  assert.ok(env.edge.proxy.state().loads > loads, 'the periodic check re-loaded the config');
  assert.equal(env.edge.proxy.state().synced, true);
});

test('Caddy down during a change: the row is saved, the answer says not synced, the next sync applies it', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  const up = await upstream('later');
  const appId = await appWithService(env, 'later', up.port);
  await env.edge.proxy.sync();
  await l.killCaddy('SIGTERM');
  const host = 'later.example.com';
  const r = await addDomain(env, { hostname: host, app_id: appId, service: 'web' });
  assert.equal(r.proxy.synced, false);
  assert.match(r.proxy.error ?? '', /unreachable/);
  assert.equal((await getDomain(env, r.domain.id)).hostname, host, 'the row is saved');
  await l.startCaddy();
  await until(l, host, (x) => x.status === 200, 'applied by the next sync');
});

test("switching upstreams changes the resolver's answer and loads no config; clients looping through Caddy lose no request, and nothing new reaches the old upstream once the switch resolved", async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const env = await labEnv(t, l);
  // Two stand-ins on one port, as two containers of a service are: the switch moves the address.
  const a = await upstream('blue', '127.0.0.2');
  const b = await upstream('green', '127.0.0.3', a.port);
  const hostOf = new Map([
    [a, '127.0.0.2'],
    [b, '127.0.0.3'],
  ]);
  const app = await insertApp(env.db, 'flip', { type: 'image', image: 'svc-test/busybox:latest' });
  await patchServiceSettings(env.db, app.id, 'web', { port: a.port });
  await switchUpstreams(env.db, env.edge, app.id, 'web', ['127.0.0.2']);
  const host = 'flip.example.com';
  const added = await addDomain(env, { hostname: host, app_id: app.id, service: 'web' });
  await until(l, host, (x) => x.status === 200 && x.body.startsWith('hello from blue'), 'blue serves');
  // The checker seeing the certificate changes the plan once more (plain HTTP starts to redirect):
  // let that load happen before counting loads.
  await poll(
    'the domain active',
    async () => (await getDomain(env, added.domain.id)).status === 'active',
    30_000,
    100,
  );
  await env.edge.proxy.sync();
  const loadsBefore = env.edge.proxy.state().loads;
  const caddyLoadsBefore = l.caddyLoads();

  let stop = false;
  const stats = {
    fresh: 0,
    kept: 0,
    retried: 0,
    freshRetried: 0,
    failures: [] as string[],
    seen: new Set<string>(),
  };
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 2 });
  cleanups.push(() => keepAlive.destroy());
  const record = (r: FetchResult) => {
    if (r.status !== 200) stats.failures.push(`status ${r.status}`);
    else stats.seen.add(r.body.split(' ')[2]!);
  };
  // A connection Caddy accepts in the instant it swaps its config can be closed by the outgoing
  // server before the request is read (a reset, no byte of answer). The request was not processed;
  // a client retries such an idempotent request once. Counted apart; a second failure is a loss.
  const freshLoop = async () => {
    while (!stop) {
      try {
        record(await l.https(host, '/'));
        stats.fresh++;
      } catch (e) {
        if (!unanswered(e)) {
          stats.failures.push(`fresh: ${(e as Error).message}`);
          continue;
        }
        stats.freshRetried++;
        try {
          record(await l.https(host, '/'));
          stats.fresh++;
        } catch (e2) {
          stats.failures.push(`fresh after a retry: ${(e2 as Error).message}`);
        }
      }
    }
  };
  // Browsers, curl and Go retry an idempotent request once, on a new connection, when a kept-alive
  // connection closes before any byte of the answer (RFC 9112, 9.3.1): a reload closes idle
  // connections. Node's agent does not, so the loop does; a failure on a fresh connection counts.
  const keptLoop = async () => {
    while (!stop) {
      try {
        record(await l.https(host, '/', { agent: keepAlive }));
        stats.kept++;
      } catch (e) {
        if (!(e as { reused?: boolean }).reused) {
          stats.failures.push(`kept-alive (new socket): ${(e as Error).message}`);
          continue;
        }
        stats.retried++;
        try {
          record(await l.https(host, '/', { agent: false }));
          stats.kept++;
        } catch (e2) {
          stats.failures.push(`kept-alive after a retry: ${(e2 as Error).message}`);
        }
      }
    }
  };
  const loops = [freshLoop(), keptLoop(), keptLoop()];
  try {
    let current = a;
    for (let i = 0; i < 5; i++) {
      const next = current === a ? b : a;
      const loads = env.edge.proxy.state().loads;
      const seenBefore = stats.fresh + stats.kept;
      const waited = await switchUpstreams(env.db, env.edge, app.id, 'web', [hostOf.get(next)!]);
      assert.notEqual(waited, null, 'the resolver answered the switch');
      await env.edge.proxy.sync();
      assert.equal(env.edge.proxy.state().loads, loads, 'no admin-API load for a switch');
      // After the switch resolves, the old upstream may stop: nothing new is routed to it.
      const hitsAfterSwitch = current.hits();
      await poll('traffic after the switch', () => stats.fresh + stats.kept > seenBefore + 60, 30_000, 20);
      assert.ok(
        current.hits() - hitsAfterSwitch <= 3,
        'at most the requests in flight at the switch reached the old upstream',
      );
      current = next;
    }
  } finally {
    stop = true;
    await Promise.all(loops);
  }
  assert.deepEqual(
    stats.failures,
    [],
    `no failed request (fresh ${stats.fresh}, kept-alive ${stats.kept}, retried once ${stats.retried}, fresh retried once ${stats.freshRetried})`,
  );
  assert.ok(stats.seen.has('blue') && stats.seen.has('green'));
  assert.equal(stats.retried + stats.freshRetried, 0, 'no connection was closed under a client');
  assert.equal(env.edge.proxy.state().loads, loadsBefore);
  assert.equal(l.caddyLoads(), caddyLoadsBefore, "Caddy's log shows no config load either");
  t.diagnostic(`fresh ${stats.fresh}, kept-alive ${stats.kept}`);
});

test('the DNS check asks SVC_DNS_RESOLVER and compares every address with SVC_PUBLIC_IP', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const check = createDnsChecker({ resolver: l.dnsAddress, publicIps: ['127.0.0.1'] });
  const here = await check('Check.Example.com.');
  assert.deepEqual(
    { ...here, checked_at: undefined },
    {
      host: 'check.example.com',
      expected: ['127.0.0.1'],
      resolved: ['127.0.0.1'],
      points_here: true,
      checked_at: undefined,
    },
  );
  await l.setA('split.example.com', ['127.0.0.1', '203.0.113.8']);
  const split = await check('split.example.com');
  assert.equal(split.points_here, false, 'one address elsewhere is enough to fail HTTP-01 validation');
  assert.deepEqual(split.resolved.sort(), ['127.0.0.1', '203.0.113.8']);
  await l.setA('split.example.com', null);
  await assert.rejects(
    check('not a host'),
    (e: unknown) => e instanceof HttpError && e.status === 400 && /spaces/.test(e.message),
  );
  const silent = createDnsChecker({
    resolver: `127.0.0.1:${await freePort()}`,
    publicIps: ['127.0.0.1'],
    timeoutMs: 300,
  });
  const down = await silent('check.example.com');
  assert.equal(down.points_here, false);
  assert.match(down.error ?? '', /resolver/);
});

/** A connection closed before any byte of the answer: the request was never processed. */
function unanswered(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return err.code === 'ECONNRESET' || /socket hang up/.test(String(err.message));
}
