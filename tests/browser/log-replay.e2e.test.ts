// A 100,000-line build log replayed over the real WebSocket to a subscriber that is slow to read:
// the replay waits for the socket instead of overrunning its 4 MB send backlog (which closed the
// socket with 1013; the dashboard then resubscribed and got the same replay again, for ever).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, adminClient, apiToken, type TestServer } from '../_support/server.js';
import { insertApp } from '#lib/apps/store.js';
import { newId } from '#lib/crypto/random.js';
import { poll } from '../_support/wait.js';
import { insertBuildLog, insertFinishedDeployment, openSocket, wsUrl } from '../_support/ws.js';

const LINES = 100_000;
let s: TestServer;
let token: string;
let depId: string;

before(async () => {
  s = await startTestServer();
  token = await apiToken(await adminClient(s), 'replay');
  const app = await insertApp(s.env.db, 'long-log', { type: 'image', image: 'svc-test/busybox:latest' });
  depId = newId();
  await insertFinishedDeployment(s.env.db, app.id, depId);
  await insertBuildLog(
    s.env.db,
    depId,
    LINES,
    (j) =>
      `#${j} compiling module ${j % 977} of the project: an ordinary build output line, long enough to count`,
  );
});

after(async () => {
  await s?.stop();
});

test('a 100,000-line build log reaches a slow reader whole and in order; the socket stays open', async () => {
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${token}` });
  let count = 0;
  let inOrder = true;
  let closed: number | null = null;
  ws.on('message', (m) => {
    const msg = JSON.parse(m.toString());
    if (msg.type !== 'event' || msg.topic !== `build:${depId}`) return;
    count++;
    if (msg.data.seq !== count) inOrder = false;
  });
  ws.on('close', (code) => (closed = code));
  ws.send(JSON.stringify({ type: 'subscribe', topic: `build:${depId}` }));
  // The reader stops reading while the replay starts: ~15 MB of frames cannot all sit in the
  // kernel's buffers, so the server's own backlog must grow unless it waits.
  const raw = (ws as unknown as { _socket: import('node:net').Socket })._socket;
  raw.pause();
  await new Promise((r) => setTimeout(r, 1500));
  raw.resume();
  await poll('every line, or the socket closed', () => count >= LINES || closed !== null, 120_000, 50);
  assert.equal(closed, null, `the socket was closed (code ${closed}) after ${count} lines`);
  assert.equal(count, LINES);
  assert.ok(inOrder, 'lines arrive in order, without gap or duplicate');
  // Live lines still flow after the replay.
  s.env.bus.publish(`build:${depId}`, {
    seq: LINES + 1,
    at: new Date().toISOString(),
    stream: 'build',
    line: 'after',
  });
  await poll('the live line', () => count === LINES + 1, 30_000, 20);
  ws.close();
});
