// A drain's buffer and sender loop with a scripted sender: at-least-once (a failed batch is sent
// again, whole, before anything newer), the oldest lines dropped and counted when the buffer is
// full, and every line accounted for (delivered + dropped + waiting = accepted).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineBuffer } from '#lib/drains/buffer.js';
import { DrainPipe } from '#lib/drains/pipe.js';
import { DRAIN_KIND_TABLE, type BatchResult, type DrainLine } from '#lib/drains/kinds/index.js';
import { poll } from '../../_support/wait.js';

const line = (n: number, app = 'a1'): DrainLine => ({
  at: 1_714_557_600_000 + n,
  appId: app,
  app: 'shop',
  service: 'web',
  container: 'shop-web-1',
  stream: 'stdout',
  source: 'container',
  line: `line ${n}`,
});

test('the buffer keeps the newest lines and counts every one it dropped', () => {
  const b = new LineBuffer(5, 1 << 20);
  for (let i = 0; i < 12; i++) b.push(line(i));
  assert.equal(b.length, 5);
  assert.equal(b.takeDropped(), 7);
  assert.equal(b.takeDropped(), 0);
  assert.deepEqual(
    b.take(3, 1 << 20).map((l) => l.line),
    ['line 7', 'line 8', 'line 9'],
  );
  assert.equal(b.length, 2);
  // A byte bound too: a long line makes room by dropping older ones.
  const small = new LineBuffer(1000, 2000);
  for (let i = 0; i < 5; i++) small.push(line(i));
  small.push({ ...line(99), line: 'x'.repeat(1500) });
  assert.ok(small.byteSize <= 2000);
  assert.ok(small.takeDropped() > 0);
});

function scripted(script: Array<'ok' | 'fail'>) {
  const sent: string[][] = [];
  let i = 0;
  return {
    sent,
    sender: {
      async send(batch: readonly DrainLine[]): Promise<BatchResult> {
        sent.push(batch.map((l) => l.line));
        const r = script[Math.min(i++, script.length - 1)];
        return r === 'ok' ? { ok: true, status: 200 } : { ok: false, status: 503, error: 'down' };
      },
      close() {},
    },
  };
}

test('a failed batch is sent again whole, before the lines that came after it', async () => {
  const s = scripted(['fail', 'fail', 'ok']);
  const pipe = new DrainPipe({
    id: 'd1',
    kind: DRAIN_KIND_TABLE.http_json,
    sender: s.sender,
    appIds: null,
    maxLines: 100,
    maxBytes: 1 << 20,
    now: Date.now,
    backoffMs: [5],
    lingerMs: 1,
  });
  for (let i = 0; i < 3; i++) pipe.offer(line(i));
  await poll('the first batch delivered', () => pipe.peekCounts().delivered === 3, 5000, 5);
  assert.deepEqual(s.sent.slice(0, 3), [
    ['line 0', 'line 1', 'line 2'],
    ['line 0', 'line 1', 'line 2'],
    ['line 0', 'line 1', 'line 2'],
  ]);
  pipe.offer(line(3));
  await poll('the next line delivered', () => pipe.peekCounts().delivered === 4, 5000, 5);
  assert.deepEqual(s.sent.at(-1), ['line 3']);
  const c = pipe.takeCounts();
  assert.equal(c.last?.ok, true);
  assert.equal(c.dropped, 0);
  await pipe.close();
});

test('a dead receiver: the buffer stays bounded, drops are counted, and every line is accounted for', async () => {
  const s = scripted(['fail']);
  const pipe = new DrainPipe({
    id: 'd2',
    kind: DRAIN_KIND_TABLE.http_json,
    sender: s.sender,
    appIds: new Set(['a1']),
    maxLines: 50,
    maxBytes: 1 << 20,
    now: Date.now,
    backoffMs: [5],
    lingerMs: 1,
  });
  assert.equal(pipe.wants('a1'), true);
  assert.equal(pipe.wants('a2'), false);
  for (let i = 0; i < 1000; i++) pipe.offer(line(i));
  await poll('a failed attempt', () => pipe.state === 'failing', 5000, 5);
  assert.ok(pipe.buffered <= 50 + 1000, 'waiting lines: the buffer and one batch in flight');
  assert.ok(pipe.buffered <= 50 + 50);
  const c = pipe.peekCounts();
  assert.equal(c.delivered, 0);
  assert.equal(c.dropped + pipe.buffered, 1000);
  assert.equal(pipe.accepted, 1000);
  assert.equal(c.last?.ok, false);
  assert.equal(c.last?.error, 'down');
  await pipe.close();
});
