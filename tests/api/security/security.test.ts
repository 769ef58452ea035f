// The Security endpoints, in-process: the tailer reading a real file (the app's background work
// on), the monitor tripping, posture rows following configuration, the agent's snapshot, the host
// CLI's opt-out. A container publishing a host port needs the engine: tests/engine/security-api.e2e.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { adminClient, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { waitFor } from '../../unit/security/_helpers.js';

const run = promisify(execFile);
const servers: TestApp[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

/** `background`: the tailer and the monitor run (runtime/background.ts), for the tests that read the log. */
async function boot(
  vars: Record<string, string> = {},
  background = false,
): Promise<{ s: TestApp; c: Client }> {
  const s = await startTestApp(vars, { background });
  servers.push(s);
  return { s, c: await adminClient(s) };
}

function line(ip: string, status: number, uri = '/'): string {
  return (
    JSON.stringify({
      level: 'info',
      ts: Date.now() / 1000,
      logger: 'http.log.access',
      msg: 'handled request',
      request: {
        remote_ip: ip,
        client_ip: ip,
        proto: 'HTTP/1.1',
        method: 'GET',
        host: 'app.example',
        uri,
        headers: {},
      },
      status,
      size: 10,
      duration: 0.001,
    }) + '\n'
  );
}

const row = (items: Array<{ code: string }>, code: string) =>
  items.find((i) => i.code === code) as { status: string; reason: string; fix: string } | undefined;

test('the access log is tailed and a burst from one address trips the monitor, on the bus and in the snapshot', async () => {
  const { s, c } = await boot(
    { SVC_SECURITY_REQUEST_THRESHOLD: '50', SVC_SECURITY_ERROR_THRESHOLD: '20' },
    true,
  );
  const log = s.env.config.accessLog;
  await writeFile(log, line('198.51.100.1', 200));
  const events: any[] = [];
  s.env.bus.onAny((e) => e.topic === 'security' && events.push(e.data));
  await waitFor(() => s.env.tailer.status().reading, 'tailer reading');
  let burst = '';
  for (let i = 0; i < 60; i++) burst += line('203.0.113.9', 200);
  for (let i = 0; i < 25; i++) burst += line('203.0.113.10', 404, '/wp-login.php');
  await appendFile(log, burst);
  const snap = await waitFor(async () => {
    const r = await c.req('GET', '/api/security/traffic');
    return r.body.recent_anomalies.length >= 2 ? r.body : null;
  }, 'two anomalies');
  assert.equal(snap.enabled, true);
  assert.equal(snap.request_threshold, 50);
  const kinds = snap.recent_anomalies.map((a: { ip: string; kind: string }) => `${a.ip} ${a.kind}`).sort();
  assert.deepEqual(kinds, ['203.0.113.10 error_surge', '203.0.113.9 request_spike']);
  assert.equal(snap.top_talkers[0].ip, '203.0.113.9');
  // The file appeared after start-up, so it is read from its first line: 1 + 60 + 25.
  assert.equal(snap.recent_requests.length, 86);
  assert.ok(
    events.some((e) => e.type === 'traffic_anomaly' && e.ip === '203.0.113.9' && e.kind === 'request_spike'),
  );
  const posture = await c.req('GET', '/api/security/posture');
  assert.equal(row(posture.body.items, 'request_monitoring')!.status, 'ok');
});

test('posture rows follow the configuration, in the contract order', async () => {
  const bare = await boot({ SVC_MASTER_KEY: '', SVC_ACCESS_LOG: '/nonexistent/dir/access.log' });
  const p1 = (await bare.c.req('GET', '/api/security/posture')).body.items;
  assert.deepEqual(
    p1.map((i: { code: string }) => i.code).filter((c: string, i: number, a: string[]) => a.indexOf(c) === i),
    [
      'firewall',
      'fail2ban',
      'master_key',
      'metrics_token',
      'exposure_mode',
      'base_domain',
      'request_monitoring',
      'host_ports',
      // Whether app containers and builds reach cloud metadata (lib/net/metadata-guard.ts).
      'link_local',
    ],
  );
  // Without SVC_MASTER_KEY the first boot generated a key beside the data: usable, but flagged.
  assert.equal(row(p1, 'master_key')!.status, 'warning');
  assert.match(row(p1, 'master_key')!.reason, /master\.key/);
  assert.equal(row(p1, 'metrics_token')!.status, 'warning');
  assert.equal(row(p1, 'exposure_mode')!.status, 'warning');
  assert.equal(row(p1, 'base_domain')!.status, 'warning');
  assert.equal(row(p1, 'request_monitoring')!.status, 'warning');
  assert.equal(row(p1, 'firewall')!.status, 'warning');
  assert.match(row(p1, 'firewall')!.fix, /svc security-agent on/);
  for (const i of p1)
    for (const k of ['status', 'title', 'reason', 'fix']) assert.equal(typeof i[k], 'string');

  const good = await boot({
    SVC_METRICS_TOKEN: 'a-long-metrics-token-123',
    SVC_EXPOSURE: 'public',
    SVC_BASE_DOMAIN: 'apps.example.com',
    SVC_SECURITY_EXPECT_FIREWALL: 'false',
  });
  const p2 = (await good.c.req('GET', '/api/security/posture')).body.items;
  for (const code of ['master_key', 'metrics_token', 'exposure_mode'])
    assert.equal(row(p2, code)!.status, 'ok', code);
  // A base domain alone is not HTTPS: with no proxy running, the row says so.
  assert.equal(row(p2, 'base_domain')!.status, 'warning');
  assert.match(row(p2, 'base_domain')!.reason, /proxy is turned off/);
  assert.equal(row(p2, 'firewall')!.status, 'info');
  assert.equal(row(p2, 'firewall')!.reason, 'disabled by operator');
  assert.equal(row(p2, 'fail2ban')!.status, 'info');
});

test('with the agent on, its snapshot drives the firewall and fail2ban rows and endpoints; garbage is unavailable, not a 500', async () => {
  const { s, c } = await boot({ SVC_SECURITY_AGENT: 'true' });
  const dir = s.env.config.security.dir;
  await mkdir(dir, { recursive: true });
  const missing = await c.req('GET', '/api/security/firewall');
  assert.equal(missing.status, 200);
  assert.equal(missing.body.available, false);
  const snapshot = {
    version: 1,
    generated_at: new Date().toISOString(),
    firewall: {
      backend: 'nftables',
      installed: true,
      active: true,
      rules: ['table inet filter', 'chain input { policy drop; }'],
    },
    fail2ban: {
      installed: true,
      active: true,
      jails: [{ name: 'sshd', currently_banned: 1, total_banned: 3, banned_ips: ['192.0.2.7'] }],
    },
  };
  await writeFile(join(dir, 'host-snapshot.json'), JSON.stringify(snapshot));
  const fw = await c.req('GET', '/api/security/firewall');
  assert.equal(fw.body.available, true, JSON.stringify(fw.body));
  assert.equal(fw.body.backend, 'nftables');
  assert.equal(fw.body.active, true);
  assert.equal(fw.body.stale, false);
  const f2b = await c.req('GET', '/api/security/fail2ban');
  assert.deepEqual(f2b.body.jails, [
    { name: 'sshd', currently_banned: 1, total_banned: 3, banned_ips: ['192.0.2.7'] },
  ]);
  let items = (await c.req('GET', '/api/security/posture')).body.items;
  assert.equal(row(items, 'firewall')!.status, 'ok');
  assert.equal(row(items, 'fail2ban')!.status, 'ok');
  await writeFile(
    join(dir, 'host-snapshot.json'),
    JSON.stringify({ ...snapshot, generated_at: new Date(Date.now() - 10 * 60_000).toISOString() }),
  );
  items = (await c.req('GET', '/api/security/posture')).body.items;
  assert.equal(row(items, 'firewall')!.status, 'warning');
  assert.equal((await c.req('GET', '/api/security/firewall')).body.stale, true);
  await writeFile(join(dir, 'host-snapshot.json'), Buffer.from([0xff, 0x00, 0x7b, 0x22, 0x9c]));
  const garbage = await c.req('GET', '/api/security/fail2ban');
  assert.equal(garbage.status, 200);
  assert.equal(garbage.body.available, false);
  items = (await c.req('GET', '/api/security/posture')).body.items;
  // An unreadable snapshot proves nothing either way: flagged, with the reason, never a 500.
  assert.equal(row(items, 'firewall')!.status, 'warning');
  assert.match(row(items, 'firewall')!.reason, /snapshot/i);
  await writeFile(
    join(dir, 'host-snapshot.json'),
    JSON.stringify({ ...snapshot, firewall: { backend: null, installed: false, active: false, rules: [] } }),
  );
  items = (await c.req('GET', '/api/security/posture')).body.items;
  assert.equal(row(items, 'firewall')!.status, 'error');
});

test('/metrics carries the monitor figures', async () => {
  const token = 'metrics-token-for-security-test';
  const { s, c } = await boot({ SVC_METRICS_TOKEN: token }, true);
  await writeFile(s.env.config.accessLog, '');
  await waitFor(() => s.env.tailer.status().reading, 'tailer reading');
  await appendFile(s.env.config.accessLog, line('192.0.2.1', 200) + 'not json\n');
  await waitFor(() => s.env.tailer.status().lines >= 2, 'lines read');
  const m = await c.req('GET', '/metrics', undefined, { authorization: `Bearer ${token}` });
  assert.match(m.text, /svc_traffic_tracked_ips 1/);
  assert.match(m.text, /svc_access_log_parse_errors_total 1/);
  assert.match(m.text, /svc_traffic_anomalies_total\{kind="request_spike"\} 0/);
});

test('svc security-check records the opt-out, prints the checklist, and --undo removes it', async () => {
  const { s } = await boot();
  const cli = fileURLToPath(new URL('../../../runtime/cli.js', import.meta.url));
  const env = { ...process.env, SVC_DATA_DIR: s.dataDir, SVC_MASTER_KEY: '', SVC_LOG_LEVEL: 'silent' };
  const out = await run(process.execPath, [cli, 'security-check'], { env });
  assert.match(out.stdout, /disabled by operator/);
  assert.match(out.stdout, /master_key|Master key/i);
  const { c } = { c: await adminClient(s) };
  assert.equal(row((await c.req('GET', '/api/security/posture')).body.items, 'firewall')!.status, 'info');
  await run(process.execPath, [cli, 'security-check', '--undo'], { env });
  assert.notEqual(row((await c.req('GET', '/api/security/posture')).body.items, 'firewall')!.status, 'info');
});
