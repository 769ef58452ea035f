// WebSockets follow their credential: revoking a token, logging out, deleting a session or an
// operator, or a new password closes them; cookie upgrades need the control plane's own Origin;
// per-resource topics of nothing answer an error frame. Real ws clients against the real server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import {
  startTestServer,
  adminClient,
  apiToken,
  Client,
  ADMIN,
  type TestServer,
} from '../_support/server.js';
import { hashPassword } from '#lib/auth/passwords.js';
import { insertUser, deleteUser, setPassword } from '#lib/auth/users-store.js';
import { newId } from '#lib/crypto/random.js';

let s: TestServer;
let admin: Client;

before(async () => {
  s = await startTestServer();
  admin = await adminClient(s);
});
after(async () => {
  await s.stop();
});

function open(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace('http', 'ws') + '/api/ws', { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })),
    );
    ws.once('error', reject);
  });
}

/** Resolves with the close code; the bound is generous, the property measured is "it closes". */
function closed(ws: WebSocket, ms = 20_000): Promise<{ code: number; reason: string; afterMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the socket is still open')), ms);
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      resolve({ code, reason: reason.toString(), afterMs: performance.now() - started });
    });
  });
}

/** The next message matching `pred`. */
function next(ws: WebSocket, pred: (m: any) => boolean, ms = 20_000): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no such message')), ms);
    const on = (d: WebSocket.RawData) => {
      const m = JSON.parse(d.toString());
      if (!pred(m)) return;
      clearTimeout(timer);
      ws.off('message', on);
      resolve(m);
    };
    ws.on('message', on);
  });
}

async function stillOpen(ws: WebSocket): Promise<void> {
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'host' }));
  await next(ws, (m) => m.type === 'subscribed' && m.topic === 'host');
  assert.equal(ws.readyState, WebSocket.OPEN);
}

async function login(username = ADMIN.username, password = ADMIN.password): Promise<Client> {
  const c = new Client(s.url);
  const r = await c.req('POST', '/api/auth/login', { username, password });
  assert.equal(r.status, 200, r.text);
  return c;
}

const cookieHeaders = (c: Client) => ({ cookie: c.cookieHeader(), origin: s.url });

test('revoking an API token closes its WebSockets; other credentials stay connected', async () => {
  const victim = await apiToken(admin, 'ws-victim');
  const bystander = await apiToken(admin, 'ws-bystander');
  const a = await open(s.url, { authorization: `Bearer ${victim}` });
  const b = await open(s.url, { authorization: `bearer ${bystander}` });
  const session = await open(s.url, cookieHeaders(admin));
  const id = (await admin.req('GET', '/api/auth/api-tokens')).body.items.find(
    (t: { name: string }) => t.name === 'ws-victim',
  ).id;
  const closing = closed(a);
  assert.equal((await admin.req('DELETE', `/api/auth/api-tokens/${id}`)).status, 204);
  const c = await closing;
  assert.equal(c.code, 1008);
  assert.match(c.reason, /revoked/);
  await stillOpen(b);
  await stillOpen(session);
  b.close();
  session.close();
});

test("logging out closes that session's WebSockets", async () => {
  const c = await login();
  const ws = await open(s.url, cookieHeaders(c));
  const other = await open(s.url, cookieHeaders(admin));
  const closing = closed(ws);
  assert.equal((await c.req('POST', '/api/auth/logout')).status, 204);
  assert.equal((await closing).code, 1008);
  await stillOpen(other);
  other.close();
});

test("deleting a session from another one closes the deleted session's WebSockets", async () => {
  const victim = await login();
  const ws = await open(s.url, cookieHeaders(victim));
  const vid = (await victim.req('GET', '/api/auth/sessions')).body.items.find(
    (x: { current: boolean }) => x.current,
  ).id;
  const closing = closed(ws);
  assert.equal((await admin.req('DELETE', `/api/auth/sessions/${vid}`)).status, 204);
  assert.equal((await closing).code, 1008);
});

test("a new password closes the operator's other sessions' WebSockets; deleting an operator closes all of theirs", async () => {
  const username = `op-${newId().slice(-6)}`;
  const password = 'a second operator password';
  const user = await insertUser(s.env.db, username, await hashPassword(password, 12));
  const c1 = await login(username, password);
  const c2 = await login(username, password);
  const keep = (await c1.req('GET', '/api/auth/sessions')).body.items.find(
    (x: { current: boolean }) => x.current,
  ).id;
  const ws1 = await open(s.url, cookieHeaders(c1));
  const ws2 = await open(s.url, cookieHeaders(c2));
  const adminWs = await open(s.url, cookieHeaders(admin));
  const closing = closed(ws2);
  await setPassword(s.env.db, user.id, await hashPassword('the new password of it', 12), keep);
  assert.equal((await closing).code, 1008);
  await stillOpen(ws1);

  const closingAll = closed(ws1);
  assert.equal(await deleteUser(s.env.db, user.id), true);
  assert.equal((await closingAll).code, 1008);
  await stillOpen(adminWs);
  adminWs.close();
});

test('a cookie upgrade needs the configured origin (SVC_PUBLIC_URL, control domain) or the plain-HTTP fallback by address', async () => {
  const t = await startTestServer({
    SVC_PUBLIC_URL: 'https://panel.example.com/',
    SVC_BASE_DOMAIN: 'apps.example.com',
  });
  try {
    const c = await adminClient(t);
    const cookie = c.cookieHeader();
    const port = new URL(t.url).port;
    // The configured public URL and the control domain (svc.<base>) are ours, whatever Host a proxy passes.
    (await open(t.url, { cookie, origin: 'https://panel.example.com' })).close();
    (await open(t.url, { cookie, origin: 'https://svc.apps.example.com' })).close();
    // http://<ip>:<port>, the fallback, is the page's own origin when Host is that address.
    (await open(t.url, { cookie, origin: `http://127.0.0.1:${port}` })).close();
    // A name that merely matches its own Host is not enough once origins are configured.
    for (const [origin, host] of [
      ['http://evil.example', 'evil.example'],
      [`http://localhost:${port}`, `localhost:${port}`],
      ['http://panel.example.com', 'panel.example.com'],
    ] as const) {
      await assert.rejects(
        open(t.url, { cookie, origin, host }),
        (e: { status?: number }) => e.status === 401,
        origin,
      );
    }
    await assert.rejects(open(t.url, { cookie }), (e: { status?: number }) => e.status === 401);
    // Bearer clients are not browsers: no Origin needed.
    const token = await apiToken(c, 'ws-origin');
    (await open(t.url, { authorization: `Bearer ${token}` })).close();
  } finally {
    await t.stop();
  }
});

test('subscribing to a topic of an app or deployment that does not exist answers an error frame', async () => {
  const token = await apiToken(admin, 'ws-topics');
  const ws = await open(s.url, { authorization: `Bearer ${token}` });
  const ghost = newId();
  for (const topic of [`logs:${ghost}`, `stats:${ghost}`, `build:${ghost}`]) {
    ws.send(JSON.stringify({ type: 'subscribe', topic }));
    const m = await next(ws, (x) => x.topic === topic);
    assert.equal(m.type, 'error', topic);
    assert.equal(m.code, 'not_found');
    assert.match(m.error, new RegExp(ghost));
  }
  assert.equal(s.env.bus.subscriberCount(`logs:${ghost}`), 0);
  const app = await admin.req('POST', '/api/apps', {
    name: 'ws-topic-app',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(app.status, 201);
  ws.send(JSON.stringify({ type: 'subscribe', topic: `logs:${app.body.app.id}` }));
  assert.equal((await next(ws, (x) => x.topic === `logs:${app.body.app.id}`)).type, 'subscribed');
  ws.close();
});
