// The wake path's bounds (runtime/wake.ts): it holds at most SVC_WAKE_MAX_HELD requests and
// upgrades at once, answering one more `503` with Retry-After at once (not after the wake timeout),
// and closes a piped upgrade that carried no traffic for SVC_WAKE_IDLE seconds.
//
// A real server on a real socket, requests as Caddy sends them (the wake header with this server's
// secret, from loopback), a real HTTP and WebSocket server standing for the app's container. One
// stand-in: the sleeper's wake, which here resolves when the test says so. The bound is about how
// long requests are held, and a real container start cannot be held open for as long as a test
// needs without asserting on time; tests/edge/sleep.e2e.test.ts wakes real containers through Caddy.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { adminClient, startTestServer, type TestServer } from '../_support/server.js';
import { setUpstreams } from '#lib/proxy/upstreams-store.js';
import { poll } from '../_support/wait.js';

let APP = '';
let s: TestServer;
let app: Server;
let wss: WebSocketServer;
let port: number;
let release: () => void = () => {};

before(async () => {
  app = createServer((_req, res) => res.end('from the app'));
  wss = new WebSocketServer({ server: app });
  wss.on('connection', (sock) => sock.on('message', (m) => sock.send(`echo ${m}`)));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  port = (app.address() as AddressInfo).port;
  s = await startTestServer({ SVC_WAKE_MAX_HELD: '2', SVC_WAKE_IDLE: '1', SVC_WAKE_TIMEOUT: '600' });
  const owner = await adminClient(s);
  const made = await owner.req('POST', '/api/apps', {
    name: 'wake-bounds',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(made.status, 201, made.text);
  APP = made.body.app.id;
  await setUpstreams(s.env.db, APP, 'web', ['127.0.0.1']);
  // The stand-in wake: pending until the test releases it.
  const gate = new Promise<void>((r) => (release = r));
  s.env.sleeper.wake = () => gate;
});
after(async () => {
  release();
  await s?.stop();
  wss?.close();
  app?.close();
});

const header = () => `${s.env.edge.wakeToken} ${APP} web ${port}`;

function get(): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${s.url}/`, { headers: { 'x-svc-wake': header() } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

function upgrade(): WebSocket {
  return new WebSocket(`${s.url.replace(/^http/, 'ws')}/`, { headers: { 'x-svc-wake': header() } });
}

test(
  'two held at once: a third request and a third upgrade get 503 with Retry-After at once; the held two are answered by the app',
  { timeout: 60_000 },
  async () => {
    const first = get();
    const second = get();
    await poll(
      'two requests held',
      async () => ((s.env.sleeper.counts.wakeRequests ?? 0) >= 2 ? true : null),
      10_000,
      10,
    );
    const third = await get();
    assert.equal(third.status, 503);
    assert.equal(third.retryAfter, '5');
    assert.match(third.body, /Too many requests are waiting for sleeping apps/);
    const refused = await new Promise<{ status: number; retry: string | undefined }>((resolve, reject) => {
      const ws = upgrade();
      ws.on('unexpected-response', (_req, res) =>
        resolve({ status: res.statusCode!, retry: res.headers['retry-after'] as string }),
      );
      ws.on('open', () => reject(new Error('the third upgrade was connected')));
      ws.on('error', () => {});
    });
    assert.deepEqual(refused, { status: 503, retry: '5' });
    release();
    for (const r of await Promise.all([first, second]))
      assert.deepEqual([r.status, r.body], [200, 'from the app']);
    // Answered, they are no longer held: the next one passes.
    assert.equal((await get()).status, 200);
  },
);

test(
  'a piped upgrade that carries no traffic for SVC_WAKE_IDLE is closed, and its place is free again',
  { timeout: 60_000 },
  async () => {
    const ws = upgrade();
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const closed = new Promise<void>((r) => ws.once('close', () => r()));
    ws.send('hello');
    const echo = await new Promise<string>((r) => ws.once('message', (m) => r(String(m))));
    assert.equal(echo, 'echo hello');
    await closed;
    assert.equal(ws.readyState, WebSocket.CLOSED, 'closed by the wake path after a quiet second');
    // The slot it held is free again: two more fit.
    const [a, b] = await Promise.all([get(), get()]);
    assert.deepEqual([a.status, b.status], [200, 200]);
  },
);
