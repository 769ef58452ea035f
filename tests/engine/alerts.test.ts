// Alert rules against the real engine: an app container burning a CPU fires a cpu_percent rule
// once and resolves it once when it stops, with exactly one signed notification each to a real
// HTTPS receiver; the resource history shows the burn. Then the control plane is stopped while a
// second rule fires and started again on the same data: nothing is sent twice, the resolution is
// sent once. The sampler and the evaluator run every second (SVC_RESOURCE_INTERVAL,
// SVC_ALERT_INTERVAL), so nothing waits minutes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '#lib/config.js';
import { createLogger } from '#lib/log.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_SERVICE } from '#lib/docker/names.js';
import { ownerLabels } from '#lib/docker/owner.js';
import { createEnv, announceSetup } from '../../runtime/boot.js';
import { startServer } from '../../runtime/server.js';
import { startBackground } from '../../runtime/background.js';
import { adminClient, apiToken, TEST_MASTER_KEY, type Client, type TestServer } from '../_support/server.js';
import { openSocket, wsUrl } from '../_support/ws.js';
import { startReceiver, receiverResolve, type Receiver } from '../_support/receiver.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { poll } from '../_support/wait.js';
import { execIn, removeTagged } from './_helpers.js';

const TAG = `alerts-${process.pid}`;
let dataDir: string;
let recv: Receiver;
let s: TestServer | undefined;
let c: Client;

async function boot(): Promise<TestServer> {
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_PASSWORD_COST: '10',
    SVC_LOG_LEVEL: 'silent',
    SVC_ACCESS_LOG: join(dataDir, 'access.log'),
    SVC_SECURITY_DIR: join(dataDir, 'security'),
    SVC_PROXY: 'off',
    SVC_NOTIFY_ALLOW: '127.0.0.1',
    SVC_RESOURCE_INTERVAL: '1',
    SVC_ALERT_INTERVAL: '1',
  });
  const env = await createEnv(config, { log: createLogger(config.logLevel) });
  await announceSetup(env);
  // The receiver's CA and name, before the outbox sends what a previous run left pending.
  Object.assign(env.notifier.transport, { agent: recv.agent, resolve: receiverResolve });
  env.notifier.backoffMs = [50, 100];
  const running = await startServer(env);
  startBackground(env, running);
  return { env, running, url: running.url, dataDir, stop: () => running.close() };
}

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-alerts-'));
  recv = await startReceiver();
});
after(async () => {
  if (s) {
    await removeTagged(s.env.engine, TAG);
    await s.stop();
  }
  await recv?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/**
 * A container of the app that burns one CPU until /tmp/stop exists, then idles. The rules' threshold
 * is low (3% of a core): on a busy shared machine the loop gets far less than a core, and an idle
 * container uses none.
 */
async function burner(app: string, service: string): Promise<string> {
  const ctr = await s!.env.engine.docker.createContainer({
    Image: BASE_IMAGE,
    name: `svc-${app}-${service}-1`,
    Cmd: ['sh', '-c', 'while [ ! -f /tmp/stop ]; do :; done; exec sleep 3600'],
    Labels: {
      ...ownerLabels(s!.env.engine),
      [LABEL_APP]: app,
      [LABEL_SERVICE]: service,
      [LABEL_DEPLOYMENT]: 'alerts',
      'svc.test': TAG,
    },
  });
  await ctr.start();
  return ctr.id;
}

/** The rule as the API shows it, for the message of a wait that timed out. */
const shown = async (id: string) => JSON.stringify((await c.req('GET', `/api/alerts/${id}`)).body);

const notes = (rule: string) =>
  recv.received.filter((r) => r.path === '/alerts' && String(r.json?.title).includes(rule));
const events = (rule: string) => notes(rule).map((r) => r.json.event as string);

/** Waits for `n` more evaluations of a rule, so "nothing more was sent" is said after they ran. */
async function evaluations(ruleId: string, n: number): Promise<void> {
  const at = async () => (await c.req('GET', `/api/alerts/${ruleId}`)).body.evaluated_at as string | null;
  const start = Date.parse((await at()) ?? '1970-01-01T00:00:00Z');
  await poll(
    `${n} evaluations`,
    async () => Date.parse((await at()) ?? '1970-01-01T00:00:00Z') >= start + n * 1000,
    60_000,
    200,
  );
}

test('an app burning CPU fires its rule once and resolves it once; the history shows the burn', async (t) => {
  if (!(await needEngine(t))) return;
  s = await boot();
  c = await adminClient(s);
  const hook = await c.req('POST', '/api/settings/notifications', {
    kind: 'webhook',
    name: 'alerts',
    url: recv.url('/alerts'),
    events: ['alert_fired', 'alert_resolved'],
  });
  assert.equal(hook.status, 201, hook.text);
  const app = (
    await c.req('POST', '/api/apps', { name: `${TAG}-cpu`, source: { type: 'image', image: BASE_IMAGE } })
  ).body.app;
  const rule = await c.req('POST', '/api/alerts', {
    name: 'cpu burn',
    app_id: app.id,
    metric: 'cpu_percent',
    op: '>',
    threshold: 3,
    for_s: 5,
    channels: [hook.body.channel.id],
  });
  assert.equal(rule.status, 201, rule.text);
  // The alerts topic hears each move too.
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${await apiToken(c, 'alerts')}` });
  t.after(() => ws.close());
  const heard: string[] = [];
  ws.on('message', (m) => {
    const f = JSON.parse(String(m));
    if (f.type === 'event' && f.topic === 'alerts' && f.data.rule === 'cpu burn') heard.push(f.data.type);
  });
  ws.send(JSON.stringify({ type: 'subscribe', topic: 'alerts' }));
  const id = await burner(app.name, 'web');
  await poll(
    'alert_fired',
    async () => events('cpu burn').length >= 1 || Promise.reject(new Error(await shown(rule.body.alert.id))),
    90_000,
    200,
  );
  await evaluations(rule.body.alert.id, 4);
  assert.deepEqual(events('cpu burn'), ['alert_fired'], 'no storm while it stays firing');
  const fired = notes('cpu burn')[0]!;
  assert.ok(Number(fired.json.fields.find((f: any) => f.name === 'Value').value) > 3);
  const history = await c.req('GET', `/api/apps/${app.id}/metrics/resources`);
  assert.ok(
    history.body.items.some((i: any) => i.service === 'web' && i.cpu_percent > 2 && i.memory_limit_bytes > 0),
    JSON.stringify(history.body.items),
  );
  assert.equal((await execIn(s.env.engine, id, ['touch', '/tmp/stop'])).exitCode, 0);
  await poll('alert_resolved', () => events('cpu burn').length >= 2, 90_000, 200);
  await evaluations(rule.body.alert.id, 3);
  assert.deepEqual(events('cpu burn'), ['alert_fired', 'alert_resolved']);
  assert.deepEqual(heard, ['alert_fired', 'alert_resolved']);
});

test('a restart of the control plane while a rule fires sends nothing twice', async (t) => {
  if (!(await needEngine(t))) return;
  const app = (
    await c.req('POST', '/api/apps', { name: `${TAG}-restart`, source: { type: 'image', image: BASE_IMAGE } })
  ).body.app;
  const channel = (await c.req('GET', '/api/settings/notifications')).body.items[0].id;
  const rule = await c.req('POST', '/api/alerts', {
    name: 'restart burn',
    app_id: app.id,
    metric: 'cpu_percent',
    op: '>',
    threshold: 3,
    for_s: 5,
    channels: [channel],
  });
  const id = await burner(app.name, 'worker');
  await poll(
    'alert_fired',
    async () =>
      events('restart burn').length >= 1 || Promise.reject(new Error(await shown(rule.body.alert.id))),
    90_000,
    200,
  );
  // Stopped and started again on the same data while the container still burns.
  await s!.stop();
  s = await boot();
  c = await adminClient(s);
  await evaluations(rule.body.alert.id, 5);
  assert.deepEqual(
    events('restart burn'),
    ['alert_fired'],
    'the firing rule is not fired again after the restart',
  );
  assert.equal((await c.req('GET', `/api/alerts/${rule.body.alert.id}`)).body.state, 'firing');
  assert.equal((await execIn(s.env.engine, id, ['touch', '/tmp/stop'])).exitCode, 0);
  await poll('alert_resolved', () => events('restart burn').length >= 2, 90_000, 200);
  await evaluations(rule.body.alert.id, 3);
  assert.deepEqual(events('restart burn'), ['alert_fired', 'alert_resolved']);
  assert.deepEqual(
    events('cpu burn'),
    ['alert_fired', 'alert_resolved'],
    'the first rule, resolved before, stays quiet',
  );
  const history = (await c.req('GET', `/api/alerts/events?rule_id=${rule.body.alert.id}`)).body.items;
  assert.deepEqual(
    history.map((e: any) => [e.kind, e.notified]),
    [
      ['resolved', true],
      ['fired', true],
    ],
  );
});
