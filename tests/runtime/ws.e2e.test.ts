import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type WebSocket from 'ws';
import { insertApp } from '#lib/apps/store.js';
import { startTestServer, adminClient, apiToken, Client, type TestServer } from '../_support/server.js';
import { insertFinishedDeployment, openSocket, wsUrl } from '../_support/ws.js';

let s: TestServer;
let admin: Client;
let token: string;

before(async () => {
  s = await startTestServer();
  admin = await adminClient(s);
  token = await apiToken(admin, 'ws');
});
after(async () => {
  await s.stop();
});

/** A deployment row that exists (build: topics need one) and that no worker will pick up. */
async function finishedDeployment(id: string): Promise<void> {
  const app = await insertApp(s.env.db, `ws-${id}`, { type: 'image', image: 'nginx:1.27' });
  await insertFinishedDeployment(s.env.db, app.id, id);
}

function open(headers: Record<string, string>): Promise<WebSocket> {
  return openSocket(wsUrl(s.url), headers);
}

function collector(ws: WebSocket) {
  const msgs: any[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (d) => {
    msgs.push(JSON.parse(d.toString()));
    waiters.splice(0).forEach((w) => w());
  });
  return {
    msgs,
    async until(pred: (m: any) => boolean, ms = 30_000): Promise<any> {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = msgs.find(pred);
        if (m) return m;
        if (Date.now() > deadline)
          throw new Error('timed out waiting for a message; got ' + JSON.stringify(msgs));
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 100);
        });
      }
    },
  };
}

test('unauthenticated upgrade gets an HTTP 401 before any socket', async () => {
  await assert.rejects(open({}), (e: { status?: number }) => e.status === 401);
  await assert.rejects(
    open({ authorization: 'Bearer svc_' + 'x'.repeat(43) }),
    (e: { status?: number }) => e.status === 401,
  );
});

/** An upgrade request's refusal as the raw HTTP answer it gets (status, content type, JSON body). */
function refusal(path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; type: string | undefined; body: unknown }>((resolve, reject) => {
    const req = httpRequest(s.url + path, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        ...headers,
      },
    });
    req.on('upgrade', () => reject(new Error(`${path} was upgraded`)));
    req.on('response', (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode!, type: res.headers['content-type'], body: JSON.parse(body) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

test('a refused upgrade answers what the same request gets without the upgrade (one error mapping)', async () => {
  const badBearer = { authorization: 'Bearer svc_' + 'x'.repeat(43) };
  for (const [path, headers] of [
    ['/api/ws', {}],
    ['/api/ws', badBearer],
    ['/api/no-such-thing', {}],
  ] as const) {
    const plain = await fetch(s.url + path, { headers });
    const refused = await refusal(path, headers);
    assert.equal(refused.status, plain.status, path);
    assert.equal(refused.type, plain.headers.get('content-type'), path);
    assert.deepEqual(refused.body, await plain.json(), path);
  }
  assert.deepEqual(await refusal('/api/ws', badBearer), {
    status: 401,
    type: 'application/json; charset=utf-8',
    body: { error: 'API token is invalid, expired or revoked', code: 'unauthorized' },
  });
  // A route that is no WebSocket is no upgrade target, whoever asks.
  assert.deepEqual((await refusal('/api/health')).body, { error: 'No such route', code: 'not_found' });
  assert.equal((await refusal('/api/health', { authorization: `Bearer ${token}` })).status, 404);
});

test('a session cookie needs a same-origin Origin', async () => {
  const cookie = admin.cookieHeader();
  await assert.rejects(open({ cookie }), (e: { status?: number }) => e.status === 401);
  await assert.rejects(
    open({ cookie, origin: 'http://evil.example' }),
    (e: { status?: number }) => e.status === 401,
  );
  const ws = await open({ cookie, origin: s.url });
  ws.close();
});

test('bearer client subscribes, receives events of its topics only, unsubscribes', async () => {
  const ws = await open({ authorization: `Bearer ${token}` });
  const c = collector(ws);
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'deployments' }));
  await c.until((m) => m.type === 'subscribed' && m.topic === 'deployments');
  s.env.bus.publish('host', { cpu: 1 });
  s.env.bus.publish('deployments', { id: 'd1', status: 'queued' });
  const ev = await c.until((m) => m.type === 'event');
  assert.equal(ev.topic, 'deployments');
  assert.deepEqual(ev.data, { id: 'd1', status: 'queued' });
  assert.ok(!Number.isNaN(Date.parse(ev.ts)));
  assert.equal(
    c.msgs.some((m) => m.topic === 'host' && m.type === 'event'),
    false,
  );
  ws.send(JSON.stringify({ type: 'unsubscribe', topic: 'deployments' }));
  await c.until((m) => m.type === 'unsubscribed');
  s.env.bus.publish('deployments', { id: 'd2' });
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'host' }));
  await c.until((m) => m.type === 'subscribed' && m.topic === 'host');
  // Only the one deployments event arrived (host events may now flow: that subscription is live).
  assert.equal(c.msgs.filter((m) => m.type === 'event' && m.topic === 'deployments').length, 1);
  assert.equal(s.env.bus.subscriberCount('deployments'), 0);
  ws.close();
});

test('bad messages get an error message, not a dropped connection', async () => {
  const ws = await open({ authorization: `Bearer ${token}` });
  const c = collector(ws);
  ws.send('not json');
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'build:../../etc' }));
  ws.send(JSON.stringify({ type: 'dance' }));
  await c.until(() => c.msgs.filter((m) => m.type === 'error').length === 3);
  for (const m of c.msgs) assert.equal(m.code, 'bad_request');
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'host' }));
  await c.until((m) => m.type === 'subscribed');
  ws.close();
});

test('a late subscriber gets the replay first, then live events, without gap or duplicate', async () => {
  const log: Array<{ seq: number; line: string }> = [];
  s.env.bus.source('build', {
    replay: async () => {
      const snapshot = log.slice();
      // Lines published while the replay is read must neither be lost nor doubled.
      s.env.bus.publish('build:abc', pushLine());
      await new Promise((r) => setTimeout(r, 20));
      return snapshot.map((d) => ({ topic: 'build:abc', ts: new Date().toISOString(), data: d }));
    },
  });
  function pushLine() {
    const d = { seq: log.length + 1, line: `line ${log.length + 1}` };
    log.push(d);
    return d;
  }
  for (let i = 0; i < 5; i++) pushLine();
  await finishedDeployment('abc');
  const ws = await open({ authorization: `Bearer ${token}` });
  const c = collector(ws);
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'build:abc' }));
  await c.until((m) => m.type === 'subscribed');
  s.env.bus.publish('build:abc', pushLine());
  // A last line is the marker: events arrive in order on one socket, so any duplicate of an
  // earlier line would come before it.
  s.env.bus.publish('build:abc', pushLine());
  await c.until((m) => m.type === 'event' && m.data.seq === 8);
  const seqs = c.msgs.filter((m) => m.type === 'event').map((m) => m.data.seq);
  assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6, 7, 8]);
  ws.close();
});
