// The event follower against an engine that delivers events out of time order, and replays the last
// second after a reconnect. The engine's event stream is a stand-in here (an HTTP server on a unix
// socket): the real engine publishes out of order only now and then (it stamps an event before it
// publishes it, from several threads: a container's `kill` beside its execs' `exec_die` on a busy
// host), which no test can bring about on demand. The wire format is the engine's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '#lib/docker/engine.js';
import { followEvents, type ContainerEvent } from '#lib/docker/events.js';
import { LABEL_APP, LABEL_SERVICE } from '#lib/docker/names.js';
import { LABEL_INSTANCE } from '#lib/docker/owner.js';
import { poll } from '../../_support/wait.js';

test('an event stamped before one already delivered still arrives; a reconnect repeats nothing', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-events-'));
  const engine = createEngine({ socketPath: join(dir, 'engine.sock') });
  const second = Math.floor(Date.now() / 1000);
  const event = (action: string, nano: number, extra: Record<string, string> = {}) =>
    `${JSON.stringify({
      Type: 'container',
      Action: action,
      time: second,
      timeNano: second * 1e9 + nano,
      Actor: {
        ID: 'c0ffee',
        Attributes: {
          [LABEL_APP]: 'web-app',
          [LABEL_SERVICE]: 'web',
          [LABEL_INSTANCE]: engine.owner.instanceId,
          name: 'svc-web-app-web',
          ...extra,
        },
      },
    })}\n`;
  // The container's kill is stamped before its exec's exec_die, and published after it.
  const kill = event('kill', 2_000, { signal: '9' });
  const execDie = event('exec_die', 3_000, { exitCode: '137' });
  const die = event('die', 4_000, { exitCode: '137' });
  const requests: string[] = [];
  const streams: ServerResponse[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    streams.push(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (requests.length === 1) {
      res.write(execDie);
      res.end(kill); // the stream breaks: the follower reconnects from this second
    } else res.write(kill + execDie + die); // the second replayed, then what is new
  });
  await new Promise<void>((r) => server.listen(engine.socketPath, () => r()));
  const got: ContainerEvent[] = [];
  const stop = new AbortController();
  const following = followEvents(engine, (e) => got.push(e), stop.signal, { maxBackoffMs: 250 });
  try {
    await poll('the die after the reconnect', () => got.some((e) => e.action === 'die'), 30_000, 20);
    assert.deepEqual(
      got.map((e) => e.action),
      ['kill', 'die'],
    );
    assert.equal(got[1]!.exit_code, 137);
    assert.equal(requests.length, 2);
    assert.match(decodeURIComponent(requests[1]!), new RegExp(`since=${second}&`));
  } finally {
    stop.abort();
    await following;
    for (const res of streams) res.destroy();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  }
});
