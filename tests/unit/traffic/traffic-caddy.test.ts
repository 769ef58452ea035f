// Real Caddy (Debian package) serving a test site on loopback with a JSON access log; real
// requests from distinct loopback source addresses go through it and trip the monitor.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request, Agent } from 'node:http';
import { writeFile, truncate, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AccessLogTailer } from '#lib/traffic/tailer.js';
import { TrafficMonitor, type Anomaly } from '#lib/traffic/monitor.js';
import { freePort, need, tempDir, waitFor } from '../security/_helpers.js';

interface Caddy {
  port: number;
  log: string;
  get(path: string, from: string): Promise<number>;
  burst(n: number, path: string, from: string): Promise<void>;
}

/**
 * Each test runs its own Caddy (own directory, port and access log), stopped when the test ends:
 * no test depends on what another left behind. Without caddy: a loud skip, or a failure under CI.
 */
async function startCaddy(t: TestContext): Promise<Caddy | null> {
  if (!(await need(t, 'caddy', ['version']))) return null;
  const { dir, cleanup } = await tempDir('caddy');
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let caddy: ChildProcess | undefined;
  t.after(async () => {
    agent.destroy();
    if (caddy && caddy.exitCode === null) {
      const exited = new Promise((r) => caddy?.once('exit', r));
      caddy.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (caddy.exitCode === null) caddy.kill('SIGKILL');
    }
    await cleanup();
  });
  const port = await freePort();
  const log = join(dir, 'access.log');
  const get = (path: string, from: string) =>
    new Promise<number>((resolve, reject) => {
      const r = request({ host: '127.0.0.1', port, path, localAddress: from, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      r.on('error', reject);
      r.end();
    });
  const burst = async (n: number, path: string, from: string) => {
    for (let i = 0; i < n; i += 10) {
      await Promise.all(Array.from({ length: Math.min(10, n - i) }, () => get(path, from)));
    }
  };
  const config = {
    admin: { disabled: true },
    logging: {
      logs: {
        access: {
          writer: { output: 'file', filename: log, roll: false },
          encoder: { format: 'json' },
          include: ['http.log.access.access'],
        },
      },
    },
    apps: {
      http: {
        servers: {
          test: {
            listen: [`127.0.0.1:${port}`],
            automatic_https: { disable: true },
            logs: { default_logger_name: 'access' },
            routes: [
              {
                match: [{ path: ['/ok'] }],
                handle: [{ handler: 'static_response', status_code: 200, body: 'ok' }],
              },
              { handle: [{ handler: 'static_response', status_code: 404, body: 'not here' }] },
            ],
          },
        },
      },
    },
  };
  await writeFile(join(dir, 'caddy.json'), JSON.stringify(config));
  let out = '';
  caddy = spawn('caddy', ['run', '--config', join(dir, 'caddy.json')], {
    cwd: dir,
    env: {
      ...process.env,
      HOME: dir,
      XDG_DATA_HOME: join(dir, 'data'),
      XDG_CONFIG_HOME: join(dir, 'config'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  caddy.stdout?.on('data', (d) => (out = (out + d).slice(-8000)));
  caddy.stderr?.on('data', (d) => (out = (out + d).slice(-8000)));
  await waitFor(async () => {
    if (caddy?.exitCode !== null) throw new Error(`caddy exited: ${out}`);
    return (await get('/ok', '127.0.0.1').catch(() => 0)) === 200;
  }, 'caddy to answer');
  await waitFor(async () => (await stat(log).catch(() => null))?.size, 'caddy access log');
  return { port, log, get, burst };
}

/** A tailer over this Caddy's log, caught up with what is there, stopped when the test ends. */
async function tail(t: TestContext, caddy: Caddy): Promise<AccessLogTailer> {
  const tailer = new AccessLogTailer(caddy.log, { pollIntervalMs: 100 });
  t.after(() => tailer.stop());
  tailer.start();
  await waitFor(() => tailer.status().reading, 'tailer reading');
  await tailer.catchUp();
  return tailer;
}

test('real Caddy traffic: a burst and a 404 storm trip the monitor; allowlisted is recorded only', async (t) => {
  const caddy = await startCaddy(t);
  if (!caddy) return;
  const { burst, port } = caddy;
  const notified: Anomaly[] = [];
  const monitor = new TrafficMonitor({
    windowSeconds: 60,
    requestThreshold: 50,
    errorThreshold: 20,
    allowlist: ['127.0.0.4/32'],
    onAnomaly: (a) => notified.push(a),
  });
  const tailer = await tail(t, caddy);
  tailer.subscribe(monitor.observe);

  await burst(60, '/ok', '127.0.0.2');
  await waitFor(() => notified.some((a) => a.ip === '127.0.0.2'), 'request spike from 127.0.0.2');
  await burst(30, '/missing?session=secret', '127.0.0.3');
  await waitFor(() => notified.some((a) => a.ip === '127.0.0.3'), 'error surge from 127.0.0.3');
  await burst(60, '/ok', '127.0.0.4');
  await waitFor(
    () => monitor.snapshot().recent_anomalies.some((a) => a.ip === '127.0.0.4'),
    'allowlisted breach recorded',
  );
  await tailer.catchUp();

  assert.deepEqual(
    notified.map((a) => [a.ip, a.kind]),
    [
      ['127.0.0.2', 'request_spike'],
      ['127.0.0.3', 'error_surge'],
    ],
  );
  assert.equal(notified[0].count, 50);
  assert.equal(notified[1].count, 20);
  const snap = monitor.snapshot();
  assert.deepEqual(
    snap.recent_anomalies.map((a) => [a.ip, a.kind, a.notified]),
    [
      ['127.0.0.4', 'request_spike', false],
      ['127.0.0.3', 'error_surge', true],
      ['127.0.0.2', 'request_spike', true],
    ],
  );
  assert.deepEqual(
    snap.top_talkers.map((x) => [x.ip, x.requests, x.errors]),
    [
      ['127.0.0.2', 60, 0],
      ['127.0.0.4', 60, 0],
      ['127.0.0.3', 30, 30],
    ],
  );
  const storm = snap.recent_requests.find((r) => r.ip === '127.0.0.3');
  assert.equal(storm?.path, '/missing', 'query strings are not kept');
  assert.equal(storm?.status, 404);
  assert.equal(storm?.host, `127.0.0.1:${port}`);
  assert.equal(snap.recent_requests[0].ip, '127.0.0.4');
  assert.equal(tailer.status().parseErrors, 0);
});

test('real Caddy: truncating its live log while requests flow loses none', async (t) => {
  const caddy = await startCaddy(t);
  if (!caddy) return;
  const { burst, log } = caddy;
  const tailer = await tail(t, caddy);
  let seen = 0;
  const unsubscribe = tailer.subscribe((e) => {
    if (e.ip === '127.0.0.5') seen++;
  });
  try {
    for (let round = 0; round < 3; round++) {
      await burst(40, '/ok', '127.0.0.5');
      // What was not read before a cut is gone for any reader, so cut once caught up; Caddy
      // writes with O_APPEND, so its next line lands at the new end of the emptied file.
      await waitFor(() => seen === 40 * (round + 1), `round ${round} read`);
      await truncate(log, 0);
    }
    await burst(40, '/ok', '127.0.0.5');
    await waitFor(() => seen === 160, 'all lines after the last cut');
    await tailer.catchUp();
    assert.equal(seen, 160);
    assert.equal(tailer.status().reading, true);
  } finally {
    unsubscribe();
  }
});
