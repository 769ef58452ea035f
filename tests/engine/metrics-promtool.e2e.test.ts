// A live scrape of the real server passes `promtool check metrics` (Debian's prometheus package)
// and carries what an operator expects: host, apps' containers, deployments, queue, HTTP by route
// and status, WebSocket clients by topic. One app is deployed for real and one fails (an image
// without a command), so both outcomes and the per-app series have values to show.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { WebSocket } from 'ws';
import { startTestServer, adminClient, apiToken, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { missing } from '../_support/ci.js';
import { appName } from './_helpers.js';
import { waitStatus, cleanupApp } from './_deploy.js';

const run = promisify(execFile);
const WEB_IMAGE = 'svc-test/metrics-web:1';
const TOKEN = 'metrics-token-' + 'x'.repeat(16);
let s: TestServer | null = null;
const made: string[] = [];

after(async () => {
  for (const name of made) if (s) await cleanupApp(s.env.engine, name);
  await s?.stop();
});

function promtool(text: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, out }));
    p.stdin.end(text);
  });
}

test('/metrics passes promtool on a live scrape and has the host, app, deployment, queue, HTTP and WebSocket series', async (t) => {
  if (!(await needEngine(t))) return;
  const have = await run('promtool', ['--version']).then(
    () => true,
    () => false,
  );
  if (!have) {
    missing(t, 'promtool is not installed (Debian package prometheus)', 'SVC_REQUIRE_PROMTOOL');
    return;
  }
  await run('sh', [
    '-c',
    'printf "FROM %s\\nRUN mkdir -p /www && echo ok > /www/index.html\\nCMD [\\"httpd\\", \\"-f\\", \\"-p\\", \\"8080\\", \\"-h\\", \\"/www\\"]\\n" "$1" | docker build -q -t "$2" -',
    'sh',
    BASE_IMAGE,
    WEB_IMAGE,
  ]);
  s = await startTestServer({ SVC_METRICS_TOKEN: TOKEN });
  const c = await adminClient(s);

  const web = appName('metrics');
  made.push(web);
  const created = await c.req('POST', '/api/apps', {
    name: web,
    source: { type: 'image', image: WEB_IMAGE },
  });
  assert.equal(created.status, 201, created.text);
  const appId = created.body.app.id as string;
  const patched = await c.req('PATCH', `/api/apps/${appId}/services/app`, { port: 8080, health_path: '/' });
  assert.equal(patched.status, 200, patched.text);
  const dep = await c.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(dep.status, 202, dep.text);
  await waitStatus(c, appId, dep.body.deployment.id, ['succeeded']);

  const broken = appName('metrics-nocmd');
  made.push(broken);
  const b = await c.req('POST', '/api/apps', { name: broken, source: { type: 'image', image: BASE_IMAGE } });
  assert.equal(b.status, 201, b.text);
  const bdep = await c.req('POST', `/api/apps/${b.body.app.id}/deployments`, {});
  assert.equal(bdep.status, 202, bdep.text);
  await waitStatus(c, b.body.app.id, bdep.body.deployment.id, ['failed']);

  // A WebSocket client on the app's log topic.
  const token = await apiToken(c, 'metrics-ws');
  const ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/ws`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  const subscribed = new Promise<void>((resolve) =>
    ws.on('message', (m) => JSON.parse(String(m)).type === 'subscribed' && resolve()),
  );
  ws.send(JSON.stringify({ type: 'subscribe', topic: `logs:${appId}` }));
  await subscribed;

  try {
    assert.equal((await c.req('GET', `/api/apps/${appId}`)).status, 200);
    const r = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(r.status, 200);
    const text = await r.text();
    const lint = await promtool(text);
    assert.equal(lint.code, 0, `promtool check metrics failed:\n${lint.out}`);
    assert.equal(lint.out.trim(), '', `promtool lint findings:\n${lint.out}`);

    const value = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(series + ' '));
      assert.ok(line, `no ${series} in the scrape`);
      return Number(line.slice(series.length + 1));
    };
    assert.ok(value('svc_host_memory_total_bytes') > 0);
    assert.ok(value('svc_host_memory_used_bytes') > 0);
    assert.ok(value('svc_host_disk_total_bytes') > 0);
    const cpu = value('svc_host_cpu_usage_ratio');
    assert.ok(cpu >= 0 && cpu <= 1, `cpu ratio ${cpu}`);
    assert.ok(value('svc_host_load{period="1m"}') >= 0);
    assert.equal(value(`svc_app_containers{app="${web}",state="running"}`), 1);
    assert.equal(value(`svc_app_container_restarts_total{app="${web}",service="app"}`), 0);
    assert.ok(value(`svc_app_cpu_seconds_total{app="${web}",service="app"}`) > 0);
    assert.ok(value(`svc_app_memory_bytes{app="${web}",service="app"}`) > 0);
    assert.equal(value('svc_deployments_total{outcome="succeeded"}'), 1);
    assert.equal(value('svc_deployments_total{outcome="failed"}'), 1);
    assert.equal(value('svc_deployment_duration_seconds_count'), 2);
    assert.equal(value('svc_deployment_duration_seconds_bucket{le="+Inf"}'), 2);
    assert.equal(value('svc_deployment_queue_depth'), 0);
    assert.ok(value('svc_http_requests_total{method="GET",route="/api/apps/:id",status="200"}') >= 1);
    assert.equal(value('svc_websocket_clients'), 1);
    assert.equal(value('svc_websocket_subscriptions{topic="logs"}'), 1);
  } finally {
    ws.close();
  }
});
