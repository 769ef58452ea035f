// Installing an add-on end to end on the real engine: the Vaultwarden template, its image mapped
// (SVC_IMAGE_MAP) to a local busybox httpd image (no registry here), becomes an app with an
// inline compose source, deploys through the ordinary pipeline and runs, with its generated
// secret in the container's env and shown once. Bad parameters are 400s that create nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE, dockerReachable } from '../_support/docker.js';
import { until } from './_helpers.js';
import { deleteApp } from '#lib/apps/ops.js';

const run = promisify(execFile);
const LOCAL = 'svc-test/addon-web:1';
const UPSTREAM = 'vaultwarden/server:1.32.3';
const UPSTREAM2 = 'louislam/uptime-kuma:1.23.16';
let s: TestServer;
let c: Client;
const apps: string[] = [];

before(async () => {
  if (await dockerReachable()) {
    await run('sh', [
      '-c',
      'printf "FROM %s\\nCMD [\\"sh\\", \\"-c\\", \\"mkdir -p /www && echo vault > /www/index.html && exec httpd -f -p 80 -h /www\\"]\\n" "$1" | docker build -q -t "$2" -',
      'sh',
      BASE_IMAGE,
      LOCAL,
    ]);
  }
  s = await startTestServer({ SVC_IMAGE_MAP: JSON.stringify({ [UPSTREAM]: LOCAL, [UPSTREAM2]: LOCAL }) });
  c = await adminClient(s);
});
after(async () => {
  for (const id of apps)
    await deleteApp(s.env, id, { volumes: true }).catch((e) => console.error('cleanup', e));
  await s?.stop();
});

test('bad add-on input is a 400 (or 404) and creates no app', async () => {
  const name = `ad-${Math.random().toString(36).slice(2, 8)}`;
  const cases: Array<[string, object, number, string | null]> = [
    ['vaultwarden', { name, params: { NOPE: 'x' } }, 400, 'params.NOPE'],
    [
      'vaultwarden',
      { name, params: { SIGNUPS_ALLOWED: 'true\nprivileged: true' } },
      400,
      'params.SIGNUPS_ALLOWED',
    ],
    ['vaultwarden', { name, params: { ADMIN_TOKEN: 'x'.repeat(2000) } }, 400, 'params.ADMIN_TOKEN'],
    ['vaultwarden', { name: 'Bad_Name' }, 400, 'name'],
    ['vaultwarden', { name, params: { SIGNUPS_ALLOWED: 5 } }, 400, null],
    ['no-such-addon', { name }, 404, null],
  ];
  for (const [id, body, status, field] of cases) {
    const r = await c.req('POST', `/api/addons/${id}/install`, body);
    assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
    if (field) assert.equal(r.body.details?.[0]?.field, field, r.text);
  }
  assert.ok(!(await c.req('GET', '/api/apps')).body.items.some((a: any) => a.name === name));
});

test('an inline compose app goes through the compose policy like a repository file', async () => {
  const bad: Array<[string, RegExp]> = [
    ['services:\n  web:\n    image: nginx:1.27\n    privileged: true\n', /privileged/],
    ['services:\n  web:\n    build: .\n', /build/],
    [
      'services:\n  web:\n    image: nginx:1.27\n    volumes:\n      - ./conf:/etc/nginx\n',
      /bind|repository/,
    ],
    ['services:\n  web:\n    image: nginx:1.27\n    volumes:\n      - /etc:/host-etc\n', /./],
    ['services: [', /YAML/],
  ];
  for (const [compose, why] of bad) {
    const name = `ic-${Math.random().toString(36).slice(2, 8)}`;
    const r = await c.req('POST', '/api/apps', { name, source: { type: 'compose', compose } });
    assert.equal(r.status, 400, `${compose}: ${r.text}`);
    assert.match(JSON.stringify(r.body.details), why);
  }
  const ok = await c.req('POST', '/api/apps', {
    name: `ic-${Math.random().toString(36).slice(2, 8)}`,
    source: { type: 'compose', compose: 'services:\n  web:\n    image: nginx:1.27\n' },
  });
  assert.equal(ok.status, 201, ok.text);
  apps.push(ok.body.app.id);
});

test('install vaultwarden: an app from the template, deployed and running, generated secret in its env', async (t) => {
  if (!(await needEngine(t))) return;
  const name = `vw-${Math.random().toString(36).slice(2, 8)}`;
  const r = await c.req('POST', '/api/addons/vaultwarden/install', {
    name,
    params: { SIGNUPS_ALLOWED: 'true' },
  });
  assert.equal(r.status, 202, r.text);
  apps.push(r.body.app.id);
  const { app, deployment, generated_secrets } = r.body;
  assert.deepEqual(Object.keys(generated_secrets), ['ADMIN_TOKEN']);
  assert.match(generated_secrets.ADMIN_TOKEN, /^[A-Za-z0-9_-]{32}$/);
  assert.equal(app.source.type, 'compose');
  assert.match(app.source.compose, new RegExp(`image: ${LOCAL}\\n`));
  const env = await c.req('GET', `/api/apps/${app.id}/env`);
  assert.deepEqual(
    env.body.items.find((i: any) => i.key === 'ADMIN_TOKEN'),
    { key: 'ADMIN_TOKEN', secret: true, value: null },
  );

  const done = await until(
    'deployment',
    async () => {
      const d = await c.req('GET', `/api/apps/${app.id}/deployments/${deployment.id}`);
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.body.deployment.status)
        ? d.body.deployment
        : null;
    },
    180_000,
    500,
  );
  if (done.status !== 'succeeded') {
    const logs = await c.req('GET', `/api/apps/${app.id}/deployments/${deployment.id}/logs`);
    assert.fail(`${done.status}: ${done.error}\n${logs.body.items.map((l: any) => l.line).join('\n')}`);
  }
  const running = await until(
    'running',
    async () => {
      const a = await c.req('GET', `/api/apps/${app.id}`);
      return a.body.app.status === 'running' ? a.body.app : null;
    },
    120_000,
    500,
  );
  assert.equal(running.status, 'running');
  const services = await c.req('GET', `/api/apps/${app.id}/services`);
  assert.deepEqual(
    services.body.items.map((x: any) => x.name),
    ['web'],
  );
  const ct = (await s.env.engine.docker.listContainers({ filters: { label: [`svc.app=${name}`] } }))[0]!;
  const info = await s.env.engine.docker.getContainer(ct.Id).inspect();
  assert.equal(info.Config.Image, LOCAL);
  assert.ok(info.Config.Env.includes(`ADMIN_TOKEN=${generated_secrets.ADMIN_TOKEN}`));
  assert.ok(info.Config.Env.includes('SIGNUPS_ALLOWED=true'));
  assert.ok((info.Mounts ?? []).some((m) => m.Type === 'volume' && m.Destination === '/data'));
  // Shown once: nothing else answers the secret (the env listing redacts it), and the name is taken now.
  assert.equal((await c.req('POST', '/api/addons/vaultwarden/install', { name })).status, 409);
});

test('install a second add-on (uptime-kuma, no parameters): it reaches running beside the first', async (t) => {
  if (!(await needEngine(t))) return;
  const name = `uk-${Math.random().toString(36).slice(2, 8)}`;
  const r = await c.req('POST', '/api/addons/uptime-kuma/install', { name });
  assert.equal(r.status, 202, r.text);
  apps.push(r.body.app.id);
  assert.deepEqual(r.body.generated_secrets, {});
  const done = await until(
    'deployment',
    async () => {
      const d = await c.req('GET', `/api/apps/${r.body.app.id}/deployments/${r.body.deployment.id}`);
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.body.deployment.status)
        ? d.body.deployment
        : null;
    },
    180_000,
    500,
  );
  assert.equal(done.status, 'succeeded', done.error);
  await until(
    'running',
    async () =>
      (await c.req('GET', `/api/apps/${r.body.app.id}`)).body.app.status === 'running' ? true : null,
    120_000,
    500,
  );
});
