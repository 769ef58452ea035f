// Builds from source through the real path: a git server, the control plane's HTTP API, the Docker
// engine. A repository without a Dockerfile deploys from a generated plan (shown first in its log and
// by GET /build-plan), a repository with nothing recognisable is refused readably, build limits stop a
// build, SVC_BUILD_CONCURRENCY lets two apps build at once, and a hostile override is a 400.
import { bridgeHostAddress } from '#lib/docker/bridge.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { dockerReachable } from '../_support/docker.js';
import { ensureStackImages, needStackImages, stackImageMap } from '../_support/stackimages.js';
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { startGitServer, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

let s: TestServer;
let admin: Client;
let git: GitServer | undefined;
const apps = new Set<string>();
const uniq = () => randomBytes(3).toString('hex');

before(async () => {
  if (!(await dockerReachable())) return;
  // Without the stand-ins (a laptop without root), every test skips loudly through ready().
  const images = await ensureStackImages().catch(() => null);
  if (!images) return;
  git = await startGitServer();
  s = await startTestServer({
    SVC_IMAGE_MAP: JSON.stringify(stackImageMap(images)),
    SVC_BUILD_CONCURRENCY: '2',
  });
  admin = await adminClient(s);
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
});

after(async () => {
  if (s) {
    for (const a of apps) await cleanupApp(s.env.engine, a);
    await s.stop();
  }
  await git?.stop();
});

/** The engine and the stand-ins for the runtime images (tests/_support/stackimages.ts). */
const ready = async (t: TestContext) => (await needStackImages(t)) !== null;

async function createApp(
  prefix: string,
  files: Record<string, string>,
  build?: unknown,
): Promise<{ id: string; name: string }> {
  const repo = `${prefix}-${uniq()}`;
  await git!.commit(repo, files, 'first');
  const name = `${prefix}-${uniq()}`;
  apps.add(name);
  const source = { type: 'git', repo_url: git!.url(repo), branch: 'main', ...(build ? { build } : {}) };
  const r = await admin.req('POST', '/api/apps', { name, source });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

async function deploy(appId: string): Promise<string> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return r.body.deployment.id;
}

async function logOf(appId: string, depId: string): Promise<{ stream: string; line: string }[]> {
  return (await admin.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`)).body.items;
}

async function waitLog(appId: string, depId: string, re: RegExp): Promise<void> {
  const deadline = Date.now() + 240_000;
  while (!(await logOf(appId, depId)).some((l) => re.test(l.line))) {
    if (Date.now() > deadline) throw new Error(`no log line ${re} in ${depId}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** An override whose build stage (node's image, after `npm install` of nothing) runs `cmd`, then serves index.html. */
const overBuild = (cmd: string) => ({
  type: 'stack',
  stack: 'static',
  build: `${cmd} && mkdir -p dist && cp index.html dist/`,
});
/** A shell word list that succeeds when GET url answers 200 (node's image has no wget or curl). */
const get = (url: string) =>
  `node -e "fetch('${url}').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"`;
const nodeSite = (text: string) => ({ 'package.json': '{"name":"site"}\n', 'index.html': `${text}\n` });

test('a repository without a Dockerfile deploys from its generated plan, shown first in the log and by GET /build-plan', async (t) => {
  if (!(await ready(t))) return;
  const files = {
    'index.html': 'built from source\n',
    // Named like the generated Dockerfile: it must not be what is built (it would fail the policy).
    '.svc-build.Dockerfile': 'FROM scratch\nADD http://169.254.169.254/latest/meta-data/ /x\n',
  };
  const app = await createApp('src', files);

  const plan = await admin.req('GET', `/api/apps/${app.id}/build-plan`);
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.stack, 'static');
  assert.deepEqual(plan.body.detected_from, ['index.html']);
  assert.deepEqual(
    plan.body.images,
    ['caddy:2-alpine', 'gcr.io/distroless/static-debian12'],
    'as written, before SVC_IMAGE_MAP',
  );
  assert.equal(plan.body.port, 8080);
  assert.match(plan.body.dockerfile, /^FROM caddy:2-alpine AS site$/m);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/build-plan?ref=nope`)).status, 400);

  assert.equal(
    (await admin.req('PATCH', `/api/apps/${app.id}/services/app`, { health_path: '/' })).status,
    200,
  );
  const depId = await deploy(app.id);
  const d = await waitStatus(admin, app.id, depId, ['succeeded']);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'built from source\n');

  const log = await logOf(app.id, depId);
  const firstPlan = log.findIndex((l) => l.stream === 'plan');
  const firstBuild = log.findIndex((l) => l.stream === 'build');
  assert.ok(firstPlan >= 0 && firstBuild > firstPlan, 'the plan comes before any build output');
  assert.ok(
    !log.slice(0, firstPlan).some((l) => /build/i.test(l.line) && l.stream !== 'plan'),
    'nothing is built before the plan is shown',
  );
  const planText = log.filter((l) => l.stream === 'plan').map((l) => l.line);
  assert.match(planText[0]!, /build plan \(detected\): stack static, from index\.html/);
  assert.ok(
    planText.some((l) => l.trim() === 'FROM caddy:2-alpine AS site'),
    planText.join('\n'),
  );

  const info = await s.env.engine.docker.getImage(d.image).inspect();
  assert.ok(info.Config.Env.includes('PORT=8080'));
  assert.deepEqual(info.Config.Cmd, [
    '/usr/local/bin/caddy',
    'run',
    '--config',
    '/etc/caddy/Caddyfile',
    '--adapter',
    'caddyfile',
  ]);
  const running = (
    await s.env.engine.docker.listContainers({ filters: { label: [`svc.app=${app.name}`] } })
  )[0]!;
  const env = (await s.env.engine.docker.getContainer(running.Id).inspect()).Config.Env;
  assert.ok(env.includes('PORT=8080'), env.join(' '));
});

test('nothing recognisable: 422 not_detectable naming what was looked for, and a failed deployment saying why', async (t) => {
  if (!(await ready(t))) return;
  const app = await createApp('none', { 'README.md': 'just words\n' });
  const r = await admin.req('GET', `/api/apps/${app.id}/build-plan`);
  assert.equal(r.status, 422, r.text);
  assert.equal(r.body.code, 'not_detectable');
  for (const f of ['package.json', 'go.mod', 'index.html'])
    assert.ok(r.body.error.includes(f) || JSON.stringify(r.body.details).includes(f), r.text);

  const d = await waitStatus(admin, app.id, await deploy(app.id), ['failed']);
  assert.match(d.error, /nothing to build: .*looked for .*package\.json/);
  assert.ok((await logOf(app.id, d.id)).some((l) => l.stream === 'error' && /nothing to build/.test(l.line)));
});

test('a build over its time or memory limit fails the deployment with the limit named', async (t) => {
  if (!(await ready(t))) return;
  const slow = await createApp('slow', nodeSite('slow'), overBuild('sleep 600'));
  const r = await admin.req('PATCH', `/api/apps/${slow.id}`, { build_limits: { timeout_s: 10 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.app.build_limits, { timeout_s: 10 });
  const d1 = await waitStatus(admin, slow.id, await deploy(slow.id), ['failed']);
  assert.match(d1.error, /ran past its time limit of 10 s \(build_limits\.timeout_s\)/);
  assert.ok((await logOf(slow.id, d1.id)).some((l) => /time limit of 10 s/.test(l.line)));

  const hungry = await createApp(
    'hungry',
    nodeSite('hungry'),
    overBuild('dd if=/dev/zero bs=300M count=1 of=/dev/null'),
  );
  assert.equal(
    (await admin.req('PATCH', `/api/apps/${hungry.id}`, { build_limits: { memory_mb: 64, cpus: 0.5 } }))
      .status,
    200,
  );
  const d2 = await waitStatus(admin, hungry.id, await deploy(hungry.id), ['failed']);
  assert.match(d2.error, /memory limit of 64 MiB \(build_limits\.memory_mb\)/);

  // Out of range, or an unknown field: 400 and nothing stored.
  for (const bad of [{ memory_mb: 32 }, { cpus: 0 }, { timeout_s: 7201 }, { disk_mb: 10 }]) {
    const b = await admin.req('PATCH', `/api/apps/${hungry.id}`, { build_limits: bad });
    assert.equal(b.status, 400, `${JSON.stringify(bad)}: ${b.text}`);
  }
  assert.deepEqual((await admin.req('GET', `/api/apps/${hungry.id}`)).body.app.build_limits, {
    memory_mb: 64,
    cpus: 0.5,
  });
});

test('two apps build at once with SVC_BUILD_CONCURRENCY=2: the first build finishes only after the second started', async (t) => {
  if (!(await ready(t))) return;
  // The first build waits for /go, which answers only once the second build has called /b: with
  // one build slot the second would wait behind the first, which would run into its time limit.
  let bStarted = false;
  const gate: Server = createServer((req, res) => {
    if (req.url === '/b') bStarted = true;
    res.writeHead(req.url === '/b' || (req.url === '/go' && bStarted) ? 200 : 404).end('ok');
  });
  await new Promise<void>((r) => gate.listen(0, '0.0.0.0', r));
  t.after(() => gate.close());
  const port = (gate.address() as { port: number }).port;
  // The host side of the default bridge, where the builds reach this server (the engine may
  // report the bridge's subnet without a gateway: derived, lib/docker/bridge.ts).
  const gw = bridgeHostAddress(await s.env.engine.docker.getNetwork('bridge').inspect());
  assert.ok(gw, 'the default bridge has an IPv4 subnet');
  assert.equal((await admin.req('PUT', '/api/instance/deploy-concurrency', { concurrency: 2 })).status, 200);
  t.after(() => admin.req('PUT', '/api/instance/deploy-concurrency', { concurrency: 1 }));

  const a = await createApp(
    'para',
    nodeSite('a'),
    overBuild(`until ${get(`http://${gw}:${port}/go`)}; do sleep 0.2; done`),
  );
  await admin.req('PATCH', `/api/apps/${a.id}`, { build_limits: { timeout_s: 180 } });
  const b = await createApp('parb', nodeSite('b'), overBuild(get(`http://${gw}:${port}/b`)));
  const depA = await deploy(a.id);
  await waitLog(a.id, depA, /build slot taken: 1 of 2/);
  const depB = await deploy(b.id);
  await waitStatus(admin, a.id, depA, ['succeeded']);
  await waitStatus(admin, b.id, depB, ['succeeded']);
  const logB = await logOf(b.id, depB);
  assert.ok(
    logB.some((l) => /build slot taken: 2 of 2 building now/.test(l.line)),
    logB.map((l) => l.line).join('\n'),
  );
  assert.ok(!logB.some((l) => /waiting for a build slot/.test(l.line)));
  assert.equal(await callInApp(s.env.engine, a.name, 'http://app:8080/'), 'a\n');
});

test('a hostile stack override (a start command with a line break) is a 400 naming the field; the build setting shows in the app', async (t) => {
  if (!(await ready(t))) return;
  const app = await createApp('hostile', { 'index.html': 'x\n' });
  const base = (await admin.req('GET', `/api/apps/${app.id}`)).body.app.source;
  const bad = [
    { start: 'caddy run\nRUN wget http://169.254.169.254/' },
    { build: 'npm run build \\' },
    { publish_dir: '../../etc' },
    { version: '22; rm -rf /' },
    { port: 70000 },
  ];
  for (const b of bad) {
    const r = await admin.req('PATCH', `/api/apps/${app.id}`, {
      source: { ...base, build: { type: 'stack', stack: 'static', ...b } },
    });
    assert.equal(r.status, 400, `${JSON.stringify(b)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
  }
  const nl = await admin.req('PATCH', `/api/apps/${app.id}`, {
    source: { ...base, build: { type: 'stack', stack: 'node', start: 'node a.js\nRUN id' } },
  });
  assert.match(JSON.stringify(nl.body), /start.*(line break|RUN)/, nl.text);
  const created = await admin.req('POST', '/api/apps', {
    name: `hostile-${uniq()}`,
    source: { ...base, build: { type: 'stack', stack: 'python', start: 'gunicorn\r\nUSER root' } },
  });
  assert.equal(created.status, 400, created.text);
  assert.equal(
    (
      await admin.req('PATCH', `/api/apps/${app.id}`, {
        source: { ...base, compose_path: 'a.yml', build: { type: 'dockerfile' } },
      })
    ).status,
    400,
  );

  const ok = await admin.req('PATCH', `/api/apps/${app.id}`, {
    source: { ...base, build: { type: 'stack', stack: 'static', port: 9000 } },
  });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual((await admin.req('GET', `/api/apps/${app.id}`)).body.app.source.build, {
    type: 'stack',
    stack: 'static',
    port: 9000,
  });
  const plan = await admin.req('GET', `/api/apps/${app.id}/build-plan`);
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.port, 9000);
});
