// Transport-level rules over the real server: rate limits and forwarded addresses, Secure
// cookies over TLS and behind a trusted proxy, links never built from the Host header, /metrics,
// and graceful shutdown.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { poll } from '../_support/wait.js';
import { startTestServer, Client, adminClient, ADMIN, type TestServer } from '../_support/server.js';

const servers: TestServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});
async function server(vars: Record<string, string> = {}) {
  const s = await startTestServer(vars);
  servers.push(s);
  return s;
}

/** A raw HTTP request from a chosen local address (127.0.0.2 is still loopback). */
function rawPost(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  localAddress: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('login is rate-limited per client address; X-Forwarded-For from an untrusted peer does not escape it', async () => {
  const s = await server({ SVC_AUTH_RATE_LIMIT: '5' });
  // A new name each time: this is about the per-address limit, not the per-account one.
  let n = 0;
  const bad = () => ({ username: `nobody-${n++}`, password: 'wrong' });
  let limited: { status: number; headers: Record<string, string | string[] | undefined> } | undefined;
  for (let i = 0; i < 8; i++) {
    const r = await rawPost(
      s.url,
      '/api/auth/login',
      bad(),
      { 'x-forwarded-for': `203.0.113.${i}` },
      '127.0.0.2',
    );
    if (r.status === 429) {
      limited = r;
      break;
    }
    assert.equal(r.status, 401);
  }
  assert.ok(limited, '127.0.0.2 was never limited despite rotating X-Forwarded-For');
  assert.ok(Number(limited.headers['retry-after']) >= 1);
  // A different client address has its own budget.
  assert.equal((await rawPost(s.url, '/api/auth/login', bad(), {}, '127.0.0.3')).status, 401);
  // From a trusted proxy (127.0.0.1), X-Forwarded-For names the client, so each forwarded client is counted apart.
  for (let i = 0; i < 4; i++)
    assert.equal(
      (await rawPost(s.url, '/api/auth/login', bad(), { 'x-forwarded-for': '198.51.100.1' }, '127.0.0.1'))
        .status,
      401,
    );
  for (let i = 0; i < 3; i++)
    assert.equal(
      (await rawPost(s.url, '/api/auth/login', bad(), { 'x-forwarded-for': '198.51.100.2' }, '127.0.0.1'))
        .status,
      401,
    );
});

test('cookies carry Secure only with X-Forwarded-Proto: https from a trusted proxy', async () => {
  const s = await server();
  const c = await adminClient(s);
  const viaProxy = await rawPost(
    s.url,
    '/api/auth/login',
    ADMIN,
    { 'x-forwarded-proto': 'https' },
    '127.0.0.1',
  );
  const cookies = viaProxy.headers['set-cookie'] as string[];
  assert.ok(cookies.find((x) => x.startsWith('svc_session='))!.includes('; Secure'));
  const spoofed = await rawPost(
    s.url,
    '/api/auth/login',
    ADMIN,
    { 'x-forwarded-proto': 'https' },
    '127.0.0.2',
  );
  assert.ok(
    !(spoofed.headers['set-cookie'] as string[])
      .find((x) => x.startsWith('svc_session='))!
      .includes('Secure'),
  );
  assert.equal((await c.req('GET', '/api/auth/me')).status, 200);
});

// The node adapter builds the request's URL from the Host header: only a socket shows whether
// a link is ever built from it.
test('the invitation link never takes its origin from the Host header', async () => {
  const s = await server();
  const owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const r = await rawPost(
    s.url,
    '/api/operators/invitations',
    { role: 'viewer' },
    {
      host: 'evil.example',
      'x-forwarded-host': 'evil.example',
      cookie: owner.cookieHeader(),
      'x-csrf-token': owner.cookies.get('svc_csrf')!,
    },
    '127.0.0.1',
  );
  assert.equal(r.status, 201, r.text);
  const url = JSON.parse(r.text).invitation.url as string;
  assert.ok(!url.includes('evil.example'), url);
  // No public address configured: a path, which the dashboard opens under its own origin.
  assert.match(url, /^\/invite\/[A-Za-z0-9_-]{43}$/);
});

test('TLS served directly: cookies are Secure', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: 'pipe', timeout: 60_000 },
    );
    const s = await server({ SVC_TLS_CERT: join(dir, 'cert.pem'), SVC_TLS_KEY: join(dir, 'key.pem') });
    assert.ok(s.url.startsWith('https://'));
    const setup = await (await import('../_support/server.js')).setupToken(s);
    const post = (path: string, body: unknown) =>
      new Promise<{ status: number; cookies: string[] }>((resolve, reject) => {
        const u = new URL(s.url);
        const req = httpsRequest(
          {
            host: u.hostname,
            port: u.port,
            path,
            method: 'POST',
            rejectUnauthorized: false,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () =>
              resolve({ status: res.statusCode!, cookies: (res.headers['set-cookie'] as string[]) ?? [] }),
            );
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });
    assert.equal((await post('/api/setup/admin', { token: setup, ...ADMIN })).status, 201);
    const login = await post('/api/auth/login', ADMIN);
    assert.equal(login.status, 200);
    for (const c of login.cookies) assert.match(c, /; Secure/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('/metrics: 404 without the exact bearer, Prometheus text with it, HTTP counts by route pattern', async () => {
  const token = 'metrics-token-0123456789abcdef';
  const s = await server({ SVC_METRICS_TOKEN: token });
  const c = new Client(s.url);
  await c.req('GET', '/api/health');
  assert.equal((await c.req('GET', '/metrics')).status, 404);
  const wrong = await c.req('GET', '/metrics', undefined, { authorization: `Bearer ${token}x` });
  assert.equal(wrong.status, 404);
  assert.equal(wrong.text.includes('token'), false);
  const ok = await c.req('GET', '/metrics', undefined, { authorization: `Bearer ${token}` });
  assert.equal(ok.status, 200);
  assert.match(ok.headers.get('content-type')!, /text\/plain/);
  assert.match(ok.text, /svc_http_requests_total\{method="GET",route="\/api\/health",status="200"\} 1/);
  assert.match(
    ok.text,
    /svc_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/api\/health"\} 1/,
  );
  assert.match(ok.text, /svc_http_request_duration_seconds_count\{method="GET",route="\/api\/health"\} 1/);
  assert.match(ok.text, /svc_process_resident_memory_bytes/);
  // An operator session is not a metrics credential.
  const admin = await adminClient(s);
  assert.equal((await admin.req('GET', '/metrics')).status, 404);
});

test('graceful shutdown lets an in-flight request finish, then refuses new connections', async () => {
  const s = await startTestServer();
  // A slow request: the body arrives only after close() has begun.
  const u = new URL(s.url);
  const arrived = new Promise((resolve) => s.running.server.once('request', resolve));
  const req = httpRequest({
    host: u.hostname,
    port: u.port,
    path: '/api/auth/login',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  const inflight = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
  });
  req.write('{"username":"x",');
  await arrived;
  const closing = s.stop();
  await poll('the server to stop accepting', () => !s.running.server.listening, 10_000, 5);
  req.end('"password":"y"}');
  assert.equal(await inflight, 401);
  await closing;
  await assert.rejects(fetch(s.url + '/api/health'));
});
