// The Node adapter's direct path (runtime/node-http.ts) over real sockets: a GET or HEAD answered
// with one writeHead and one end must be byte-for-byte what the general path sends, the Request
// it builds must still abort when the client leaves, and what the direct path cannot write
// (cookies, buffers) still goes out whole. Also the credential cache's bound on staleness.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Response } from '@whatwg-node/fetch';
import { startTestServer, ADMIN, type TestServer } from '../_support/server.js';
import { BodylessRequest, LazyRequest, sendDirect } from '../../runtime/node-http.js';
import { json, text, type PlainResponse } from '#lib/http/respond.js';
import { sendNodeResponse } from '@whatwg-node/server';
import { loadConfig } from '#lib/config.js';
import { createEnv } from '../../runtime/boot.js';
import { createLogger } from '#lib/log.js';
import { createDispatcher } from '../../runtime/dispatcher.js';
import { routes } from '../../runtime/routes.gen.js';
import { insertUser } from '#lib/auth/users-store.js';
import { createApiToken } from '#lib/auth/tokens.js';
import { hotStatement } from '#lib/db/index.js';
import { Request } from '@whatwg-node/fetch';

let srv: TestServer;
before(async () => {
  srv = await startTestServer();
});
after(async () => {
  await srv.stop();
});

function raw(
  url: string,
  method: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('GET and HEAD of a JSON answer: status, headers and length as declared, no body for HEAD', async () => {
  const get = await raw(srv.url + '/api/health', 'GET');
  assert.equal(get.status, 200);
  assert.equal(get.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(get.body, '{"status":"ok","db":"ok"}');
  assert.equal(get.headers['content-length'], String(Buffer.byteLength(get.body)));
  assert.equal(get.headers['transfer-encoding'], undefined);
  const head = await raw(srv.url + '/api/health', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-length'], get.headers['content-length']);
  assert.equal(head.body, '');
  const missing = await raw(srv.url + '/api/nope', 'GET');
  assert.equal(missing.status, 404);
  assert.deepEqual(JSON.parse(missing.body), { error: 'No such route', code: 'not_found' });
  const refused = await raw(srv.url + '/api/auth/me', 'GET', { authorization: 'Bearer svc_nope' });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['content-length'], String(Buffer.byteLength(refused.body)));
});

test('answers the direct path does not write (cookies from a body request) still arrive whole', async () => {
  const setup = await raw(srv.url + '/api/setup/status', 'GET');
  assert.equal(setup.status, 200);
  const login = await fetch(srv.url + '/api/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  // Whether or not an operator exists yet, the answer is complete JSON with its own length.
  const text = await login.text();
  assert.doesNotThrow(() => JSON.parse(text));
  assert.equal(login.headers.get('content-length'), String(Buffer.byteLength(text)));
});

test('the Request of a GET aborts its signal when the client goes away before the answer', async () => {
  let aborted!: Promise<boolean>;
  let built!: Request;
  const server = createServer((req, res) => {
    built = new BodylessRequest(req, res);
    const signal = built.signal;
    aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve(true)));
    // No answer: the client hangs up first.
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const req = httpRequest({
    port,
    host: '127.0.0.1',
    path: '/x?y=1',
    headers: { host: 'example.test:81', 'x-a': 'b' },
  });
  req.on('error', () => {});
  req.end();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(built.url, 'http://example.test:81/x?y=1');
  assert.equal(built.method, 'GET');
  assert.equal(built.headers.get('x-a'), 'b');
  assert.equal(built.signal.aborted, false);
  req.destroy();
  assert.equal(await aborted, true);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

test('a GET answered in full never aborts its signal; a buffer body is left to the general path', async () => {
  let signal!: AbortSignal;
  let direct: boolean | undefined;
  const server = createServer((req, res) => {
    signal = new BodylessRequest(req, res).signal;
    const buf = new Response(new Uint8Array([1, 2, 3]), {
      headers: { 'content-type': 'application/octet-stream' },
    });
    direct = sendDirect(buf, res);
    sendDirect(text('done', 200, 'text/plain'), res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const res = await raw(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 'GET');
  assert.equal(res.body, 'done');
  assert.equal(res.headers['content-length'], '4');
  assert.equal(direct, false);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(signal.aborted, false);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

test("a GET's lazy Request reads as the one the adapter would build", async () => {
  let lazy!: LazyRequest;
  const server = createServer((req, res) => {
    lazy = new LazyRequest(req, res);
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await raw(`http://127.0.0.1:${port}/x?y=1`, 'GET', { host: 'example.test:81', 'x-a': 'b' });
  assert.equal(lazy.method, 'GET');
  assert.equal(lazy.url, 'http://example.test:81/x?y=1');
  assert.equal(lazy.headers.get('x-a'), 'b');
  assert.ok(lazy.real instanceof BodylessRequest);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

test('a plain answer read or changed as a Fetch Response goes out through the general path, changes included', async () => {
  const untouched = json({ a: 1 }, 201, { etag: '"x"' });
  const changed = json({ a: 1 }, 201);
  changed.headers.append('set-cookie', 'a=1; Path=/');
  changed.headers.append('set-cookie', 'b=2; Path=/');
  const results: boolean[] = [];
  const server = createServer((req, res) => {
    const response = req.url === '/untouched' ? untouched : changed;
    const direct = sendDirect(response, res);
    results.push(direct);
    if (!direct) void sendNodeResponse((response as PlainResponse).real, res, req, true);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const a = await raw(base + '/untouched', 'GET');
  assert.deepEqual(
    [a.status, a.headers.etag, a.headers['content-type'], a.body],
    [201, '"x"', 'application/json; charset=utf-8', '{"a":1}'],
  );
  assert.equal(a.headers['content-length'], '7');
  const b = await raw(base + '/changed', 'GET');
  assert.deepEqual(b.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/']);
  assert.equal(b.body, '{"a":1}');
  assert.deepEqual(results, [true, false]);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

test('a token revoked behind the process is refused once the cache TTL has passed, even under steady use', async () => {
  let now = Date.parse('2030-01-01T00:00:00Z');
  const config = loadConfig({
    SVC_DATA_DIR: '/nonexistent-svc-test',
    SVC_MASTER_KEY: 'b'.repeat(64),
    SVC_LOG_LEVEL: 'silent',
  });
  const env = await createEnv(config, { dataDir: ':memory:', log: createLogger('silent'), now: () => now });
  try {
    const app = createDispatcher(env, routes);
    const user = await insertUser(env.db, 'ops', 'x');
    const { token, id } = await createApiToken(env.db, user.id, 't', null, now);
    const me = async () =>
      (
        await app.fetch(
          new Request('http://x/api/auth/me', { headers: { authorization: `Bearer ${token}` } }),
        )
      ).status;
    assert.equal(await me(), 200);
    // Another process on the same file revokes it: this process hears nothing.
    hotStatement(env.db, 'update api_tokens set revoked_at = ? where id = ?').run(
      new Date(now).toISOString(),
      id,
    );
    for (let i = 0; i < 4; i++) {
      now += 1_000;
      assert.equal(await me(), 200, 'within the TTL the cached answer may stand');
    }
    now += 1_500;
    assert.equal(await me(), 401);
  } finally {
    await env.db.destroy();
  }
});
