// What one tenant of the edge must not reach, played against real Caddy (Debian's 2.6.2), Pebble
// and, for the control route, real containers on an engine network:
// - an uploaded certificate that also names other hosts is presented only for its own domain,
//   checked with real TLS handshakes per SNI name;
// - a container on an app network asking the host's proxy port for the control domain is refused,
//   while the same request from the host reaches the API.
import { bridgeHostAddress } from '#lib/docker/bridge.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, X509Certificate } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import type { Services } from '#lib/http/handler.js';
import { insertApp, patchServiceSettings } from '#lib/apps/store.js';
import { addDomain, uploadCertificate } from '#lib/proxy/domains.js';
import { setUpstreams } from '#lib/proxy/upstreams-store.js';
import { createEngine } from '#lib/docker/index.js';
import { labEnv, labPerFile } from '../_support/edge.js';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { startTestServer, type TestServer } from '../_support/server.js';
import { issue } from '../_support/pki.js';
import { poll } from '../_support/wait.js';
import { execIn } from '../engine/_helpers.js';

const { theLab, cleanups } = labPerFile();

async function upstreamPort(): Promise<number> {
  const server = createServer((_q, res) => res.end('app'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return (server.address() as AddressInfo).port;
}

async function appWithService(env: Services, name: string, port: number): Promise<string> {
  const app = await insertApp(env.db, name, { type: 'image', image: BASE_IMAGE });
  await patchServiceSettings(env.db, app.id, 'web', { port });
  await setUpstreams(env.db, app.id, 'web', ['127.0.0.1']);
  return app.id;
}

type Handshake = { fingerprint: string; issuer: string } | { error: string };

/** One real TLS handshake with Caddy for `servername` (null: no SNI); what certificate it presented. */
function handshake(port: number, servername: string | null): Promise<Handshake> {
  return new Promise((resolve) => {
    const s = connect({
      host: '127.0.0.1',
      port,
      ...(servername ? { servername } : {}),
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
    });
    s.once('secureConnect', () => {
      const c = s.getPeerCertificate();
      resolve({ fingerprint: c.fingerprint256, issuer: String(c.issuer?.CN ?? '') });
      s.destroy();
    });
    s.once('error', (e) => resolve({ error: e.message }));
  });
}

/** POST through Caddy's HTTP port with a Host of our choosing; the status. */
function postVia(port: number, host: string, path: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { host, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

test('an uploaded certificate that also names the control domain and other apps is presented only for its own domain', async (t) => {
  const l = await theLab(t);
  if (!l) return;
  const control = 'svc.scope.test';
  const env = await labEnv(t, l, { SVC_CONTROL_DOMAIN: control });
  const port = await upstreamPort();
  const [alpha, beta, gamma] = [
    await appWithService(env, 'alpha', port),
    await appWithService(env, 'beta', port),
    await appWithService(env, 'gamma', port),
  ];
  const a = (await addDomain(env, { hostname: 'alpha.scope.test', app_id: alpha, service: 'web' })).domain;
  await addDomain(env, { hostname: 'beta.scope.test', app_id: beta, service: 'web' });
  const g = (await addDomain(env, { hostname: 'gamma.scope.test', app_id: gamma, service: 'web' })).domain;

  // The control domain and beta get ACME certificates; gamma its own upload.
  const acme = async (host: string) =>
    poll(
      `an ACME certificate for ${host}`,
      async () => {
        const h = await handshake(l.httpsPort, host);
        return 'issuer' in h && /Pebble/.test(h.issuer) ? h : null;
      },
      60_000,
      200,
    );
  const controlAcme = await acme(control);
  const betaAcme = await acme('beta.scope.test');
  const own = await issue(l.ca, ['gamma.scope.test']);
  assert.equal(
    (await uploadCertificate(env, g.id, { cert_pem: own.certPem, key_pem: own.keyPem })).proxy.synced,
    true,
  );

  // alpha's upload also names the control domain, beta, gamma and, by a wildcard, any other name.
  const wide = await issue(l.ca, [
    'alpha.scope.test',
    control,
    'beta.scope.test',
    'gamma.scope.test',
    '*.scope.test',
  ]);
  const r = await uploadCertificate(env, a.id, { cert_pem: wide.certPem, key_pem: wide.keyPem });
  assert.equal(r.proxy.synced, true);
  const wideFp = fingerprintOf(wide.certPem);
  await poll(
    'alpha served with its upload',
    async () => {
      const h = await handshake(l.httpsPort, 'alpha.scope.test');
      return 'fingerprint' in h && h.fingerprint === wideFp;
    },
    60_000,
    200,
  );

  // Several handshakes per name: Caddy picks among cached certificates at each one.
  const seen = new Map<string, Handshake[]>();
  for (const name of [control, 'beta.scope.test', 'gamma.scope.test', 'nobody.scope.test', null]) {
    const list: Handshake[] = [];
    for (let i = 0; i < 5; i++) list.push(await handshake(l.httpsPort, name));
    seen.set(String(name), list);
    for (const h of list)
      assert.ok(
        !('fingerprint' in h) || h.fingerprint !== wideFp,
        `alpha's certificate was presented for ${name ?? '(no SNI)'}`,
      );
  }
  // The others keep their own certificates.
  for (const h of seen.get(control)!)
    assert.ok(
      'issuer' in h && /Pebble/.test(h.issuer) && h.fingerprint === controlAcme.fingerprint,
      `control domain: ${JSON.stringify(h)}`,
    );
  for (const h of seen.get('beta.scope.test')!)
    assert.ok('issuer' in h && h.fingerprint === betaAcme.fingerprint, `beta: ${JSON.stringify(h)}`);
  for (const h of seen.get('gamma.scope.test')!)
    assert.ok(
      'fingerprint' in h && h.fingerprint === fingerprintOf(own.certPem),
      `gamma: ${JSON.stringify(h)}`,
    );
  // A name nobody serves gets no certificate at all.
  for (const h of seen.get('nobody.scope.test')!)
    assert.ok('error' in h, `unknown name: ${JSON.stringify(h)}`);
  // And alpha itself still gets its upload.
  const mine = await handshake(l.httpsPort, 'alpha.scope.test');
  assert.ok('fingerprint' in mine && mine.fingerprint === wideFp);
});

test('a container on an app network reaching the host proxy port for the control domain is refused (403); the host is answered', async (t) => {
  const l = await theLab(t);
  if (!l || !(await needEngine(t))) return;
  const engine = createEngine({ socketPath: DOCKER_SOCKET });
  const control = 'ctl.plain.test';
  // Awaiting DNS: the control domain is proxied to the API over plain HTTP, the path a container
  // would take through the host's port 80.
  await l.setA(control, ['203.0.113.7']);
  cleanups.push(() => l.setA(control, null));
  const server: TestServer = await startTestServer(
    { ...l.vars, SVC_CONTROL_DOMAIN: control },
    { edge: { checkIntervalMs: 500, checkerTickMs: 250 } },
  );
  cleanups.push(() => server.stop());

  const host = await poll(
    'the API through Caddy from the host',
    async () => {
      const r = await l.http(control, '/api/health');
      return r.status === 200 ? r : null;
    },
    60_000,
    200,
  );
  assert.match(host.body, /"status"/);

  // An app network made after boot: the guard learns it from the engine's events, the proxy follows.
  const tag = `edge-${randomBytes(3).toString('hex')}`;
  await engine.docker.createNetwork({ Name: tag, Driver: 'bridge', Labels: { 'svc.test': tag } });
  cleanups.push(() => engine.docker.getNetwork(tag).remove());
  // The host side of the new bridge (derived: the engine may report no gateway, lib/docker/bridge.ts).
  const net = await engine.docker.getNetwork(tag).inspect();
  const subnet = net.IPAM?.Config?.[0]?.Subnet as string | undefined;
  const gateway = bridgeHostAddress(net);
  assert.ok(gateway && subnet, 'the network has an IPv4 subnet');
  const c = await engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', '600'],
    Labels: { 'svc.test': tag },
    HostConfig: { NetworkMode: tag },
  });
  cleanups.push(() => c.remove({ force: true, v: true }));
  await c.start();
  const ip = (await c.inspect()).NetworkSettings.Networks[tag]?.IPAddress;
  assert.ok(ip);

  /** The status line busybox wget saw (-S prints the answer's headers on stderr). */
  const fromContainer = async (path: string, extra: string[] = []) => {
    const r = await execIn(engine, c.id, [
      'timeout',
      '5',
      'wget',
      '-S',
      '-q',
      '-O',
      '-',
      '--header',
      `Host: ${control}`,
      ...extra,
      `http://${gateway}:${l.httpPort}${path}`,
    ]);
    return {
      status: Number(/HTTP\/1\.1 (\d{3})/.exec(r.stderr)?.[1] ?? 0),
      body: r.stdout.toString(),
      out: r.stderr,
    };
  };
  const refused = await poll(
    'the control route refuses the new network',
    async () => {
      const r = await fromContainer('/api/health');
      return r.status === 403 ? r : null;
    },
    60_000,
    500,
  );
  assert.equal(refused.status, 403, 'busybox wget drops the body of an error answer');
  assert.ok(server.running.subnets.subnets().includes(subnet), 'the same list as the API guard');

  // A sign-in attempt from the container never reaches the API: no audit entry with its address.
  const login = await fromContainer('/api/auth/login', [
    '--header',
    'Content-Type: application/json',
    '--post-data',
    '{"username":"admin","password":"guess"}',
  ]);
  assert.equal(login.status, 403, login.out);
  const fromIt = await server.env.db
    .selectFrom('audit')
    .select(['action', 'ip'])
    .where('ip', '=', ip)
    .execute();
  assert.deepEqual(fromIt, []);

  // The same request from the host is still answered, and a failed sign-in through Caddy is audited.
  assert.equal((await l.http(control, '/api/health')).status, 200);
  assert.equal(
    await postVia(l.httpPort, control, '/api/auth/login', { username: 'admin', password: 'guess' }),
    401,
  );
  const audited = await server.env.db
    .selectFrom('audit')
    .select(['action', 'ip'])
    .where('action', '=', 'auth.login_failed')
    .execute();
  assert.ok(audited.length >= 1 && audited.every((x) => x.ip !== ip));
});
