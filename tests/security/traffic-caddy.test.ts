// Real Caddy (Debian package) serving a test site on loopback with a JSON access log; real
// requests from distinct loopback source addresses go through it and trip the monitor.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request, Agent } from 'node:http';
import { writeFile, truncate, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AccessLogTailer } from '../../lib/traffic/tailer.js';
import { TrafficMonitor, type Anomaly } from '../../lib/traffic/monitor.js';
import { freePort, haveCommand, required, tempDir, waitFor } from './_helpers.js';

let dir = '';
let cleanupDir: (() => Promise<void>) | undefined;
let caddy: ChildProcess | undefined;
let caddyOut = '';
let port = 0;
let tailer: AccessLogTailer | undefined;
const agent = new Agent({ keepAlive: true, maxSockets: 8 });
let available = false;

function get(path: string, from: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, localAddress: from, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', reject);
    r.end();
  });
}

async function burst(n: number, path: string, from: string): Promise<void> {
  for (let i = 0; i < n; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, n - i) }, () => get(path, from)));
  }
}

before(async () => {
  available = await haveCommand('caddy', ['version']);
  if (!available) {
    if (required) throw new Error('caddy is not installed, and CI requires it');
    return;
  }
  ({ dir, cleanup: cleanupDir } = await tempDir('caddy'));
  port = await freePort();
  const log = join(dir, 'access.log');
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
              { match: [{ path: ['/ok'] }], handle: [{ handler: 'static_response', status_code: 200, body: 'ok' }] },
              { handle: [{ handler: 'static_response', status_code: 404, body: 'not here' }] },
            ],
          },
        },
      },
    },
  };
  await writeFile(join(dir, 'caddy.json'), JSON.stringify(config));
  caddy = spawn('caddy', ['run', '--config', join(dir, 'caddy.json')], {
    cwd: dir,
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  caddy.stdout?.on('data', (d) => (caddyOut += d));
  caddy.stderr?.on('data', (d) => (caddyOut = (caddyOut + d).slice(-8000)));
  await waitFor(async () => {
    if (caddy?.exitCode !== null) throw new Error(`caddy exited: ${caddyOut}`);
    return (await get('/ok', '127.0.0.1')) === 200;
  }, 'caddy to answer');
  await waitFor(async () => (await stat(log)).size > 0, 'caddy access log');
});

after(async () => {
  agent.destroy();
  await tailer?.stop();
  if (caddy && caddy.exitCode === null) {
    const exited = new Promise((r) => caddy?.once('exit', r));
    caddy.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (caddy.exitCode === null) caddy.kill('SIGKILL');
  }
  await cleanupDir?.();
});

test('real Caddy traffic: a burst and a 404 storm trip the monitor; allowlisted is recorded only', async (t) => {
  if (!available) {
    console.error(`\n*** SKIPPING ${t.name}: caddy is not installed ***\n`);
    return t.skip('caddy not installed');
  }
  const notified: Anomaly[] = [];
  const monitor = new TrafficMonitor({
    windowSeconds: 60,
    requestThreshold: 50,
    errorThreshold: 20,
    allowlist: ['127.0.0.4/32'],
    onAnomaly: (a) => notified.push(a),
  });
  tailer = new AccessLogTailer(join(dir, 'access.log'), { pollIntervalMs: 100 });
  tailer.subscribe(monitor.observe);
  tailer.start();
  await waitFor(() => tailer?.status().reading, 'tailer reading');
  await tailer.catchUp();

  await burst(60, '/ok', '127.0.0.2');
  await waitFor(() => notified.some((a) => a.ip === '127.0.0.2'), 'request spike from 127.0.0.2');
  await burst(30, '/missing?session=secret', '127.0.0.3');
  await waitFor(() => notified.some((a) => a.ip === '127.0.0.3'), 'error surge from 127.0.0.3');
  await burst(60, '/ok', '127.0.0.4');
  await waitFor(() => monitor.snapshot().recent_anomalies.some((a) => a.ip === '127.0.0.4'), 'allowlisted breach recorded');
  await tailer.catchUp();

  assert.deepEqual(notified.map((a) => [a.ip, a.kind]), [['127.0.0.2', 'request_spike'], ['127.0.0.3', 'error_surge']]);
  assert.equal(notified[0].count, 50);
  assert.equal(notified[1].count, 20);
  const snap = monitor.snapshot();
  assert.deepEqual(snap.recent_anomalies.map((a) => [a.ip, a.kind, a.notified]), [
    ['127.0.0.4', 'request_spike', false],
    ['127.0.0.3', 'error_surge', true],
    ['127.0.0.2', 'request_spike', true],
  ]);
  assert.deepEqual(snap.top_talkers.map((x) => [x.ip, x.requests, x.errors]), [
    ['127.0.0.2', 60, 0],
    ['127.0.0.4', 60, 0],
    ['127.0.0.3', 30, 30],
  ]);
  const storm = snap.recent_requests.find((r) => r.ip === '127.0.0.3');
  assert.equal(storm?.path, '/missing', 'query strings are not kept');
  assert.equal(storm?.status, 404);
  assert.equal(storm?.host, `127.0.0.1:${port}`);
  assert.equal(snap.recent_requests[0].ip, '127.0.0.4');
  assert.equal(tailer.status().parseErrors, 0);
});

test('real Caddy: truncating its live log while requests flow loses none', async (t) => {
  if (!available || !tailer) return t.skip('caddy not installed or tailer not started');
  const log = join(dir, 'access.log');
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
