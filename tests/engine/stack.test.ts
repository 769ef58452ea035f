import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { parseCompose } from '#lib/compose/index.js';
import {
  createEngine,
  planStack,
  stackUp,
  stackStop,
  stackStart,
  stackRestart,
  stackRemove,
  listServices,
  listAppContainers,
  followEvents,
  EngineUnavailableError,
  networkName,
  volumeName,
  type ContainerEvent,
  type StackPlan,
} from '#lib/docker/index.js';
import { appName, cleanup, execIn, until } from './_helpers.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
const apps = new Set<string>();

after(() => cleanup(engine, apps));

async function plan(app: string, yaml: string, env: Record<string, string> = {}): Promise<StackPlan> {
  const parsed = parseCompose(yaml, { env });
  assert.deepEqual(
    parsed.findings.filter((f) => f.level === 'error'),
    [],
  );
  const p = await planStack(parsed.model!, { app, env });
  assert.ok(p.ok, JSON.stringify(p.findings));
  return p.plan;
}

const HTTPD = (port: number) =>
  `["sh", "-c", "mkdir -p /www && echo ok-$$HOSTNAME > /www/index.html && exec httpd -f -p ${port} -h /www"]`;

const TWO_SERVICES = `
services:
  web:
    image: ${BASE_IMAGE}
    command: ${HTTPD(8080)}
    ports: ["127.0.0.1::8080"]
    depends_on:
      db:
        condition: service_healthy
    healthcheck:
      test: ["CMD", "wget", "-q", "-O", "/dev/null", "http://db:8081/"]
      interval: 1s
      timeout: 5s
      retries: 60
  db:
    image: ${BASE_IMAGE}
    command: ${HTTPD(8081)}
    healthcheck:
      test: "wget -q -O /dev/null http://127.0.0.1:8081/ || exit 1"
      interval: 1s
      retries: 60
`;

test('a two-service stack with depends_on service_healthy comes up healthy; stop/start/restart', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const p = await plan(app, TWO_SERVICES);
  assert.deepEqual(
    p.services.map((s) => s.name),
    ['db', 'web'],
    'dependencies first',
  );
  const lines: string[] = [];
  const up = await stackUp(engine, p, { deploymentId: 'd1', onLog: (l) => lines.push(l) });
  assert.deepEqual(
    up.services.map((s) => s.containerName),
    [`svc-${app}-db-1`, `svc-${app}-web-1`],
  );
  assert.ok(lines.some((l) => /waiting for db \(service_healthy\)/.test(l)));

  const services = await until('both services healthy', async () => {
    const s = await listServices(engine, app);
    return s.length === 2 && s.every((x) => x.status === 'running' && x.health === 'healthy') ? s : null;
  });
  const web = services.find((s) => s.name === 'web')!;
  assert.deepEqual(web.ports, ['8080/tcp']);
  assert.equal(web.published_ports.length >= 1, true);
  const pub = web.published_ports[0];
  assert.equal(pub.host_ip, '127.0.0.1');
  assert.equal(pub.container_port, 8080);
  const body = await (await fetch(`http://127.0.0.1:${pub.host_port}/`)).text();
  assert.match(body, /^ok-/);
  assert.equal(web.containers[0].deployment, 'd1');
  const info = await engine.docker.getContainer(web.containers[0].id).inspect();
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), [networkName(app)]);
  assert.ok(info.NetworkSettings.Networks[networkName(app)].Aliases?.includes('web'));
  assert.equal(info.Config.Labels['svc.app'], app);
  assert.equal(info.Config.Labels['svc.service'], 'web');

  // Re-running the same deployment keeps what runs (a retried step converges).
  const again = await stackUp(engine, p, { deploymentId: 'd1' });
  assert.ok(again.services.every((s) => s.reused));

  const stopped = await stackStop(engine, app);
  assert.equal(stopped.length, 2);
  assert.ok((await listServices(engine, app)).every((s) => s.status === 'exited'));
  await stackStart(engine, app);
  await until('running again', async () =>
    (await listServices(engine, app)).every((s) => s.status === 'running'),
  );
  await stackStop(engine, app, 'web');
  const mixed = await listServices(engine, app);
  assert.equal(mixed.find((s) => s.name === 'web')!.status, 'exited');
  assert.equal(mixed.find((s) => s.name === 'db')!.status, 'running');
  await stackStart(engine, app, 'web');
  const before = (await engine.docker.getContainer(web.containers[0].id).inspect()).State.StartedAt;
  await stackRestart(engine, app, 'web');
  const afterRestart = await engine.docker.getContainer(web.containers[0].id).inspect();
  assert.equal(afterRestart.State.Running, true);
  assert.notEqual(afterRestart.State.StartedAt, before);
  await until('healthy after restart', async () =>
    (await listServices(engine, app)).every((s) => s.health === 'healthy'),
  );

  const removed = await stackRemove(engine, app, { volumes: false });
  assert.equal(removed.containers.length, 2);
  assert.deepEqual(removed.networks, [networkName(app)]);
  assert.deepEqual(await listAppContainers(engine, app), []);
  // Retrying a finished removal is fine.
  assert.deepEqual((await stackRemove(engine, app, { volumes: false })).containers, []);
});

test('a failing dependency stops stackUp with a readable reason', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const p = await plan(
    app,
    `
services:
  web:
    image: ${BASE_IMAGE}
    command: ["sleep", "600"]
    depends_on: { db: { condition: service_healthy } }
  db:
    image: ${BASE_IMAGE}
    command: ["sleep", "600"]
    healthcheck: { test: ["CMD", "false"], interval: 1s, retries: 2 }
`,
  );
  await assert.rejects(stackUp(engine, p, { deploymentId: 'd1' }), /web: dependency db failed: .*unhealthy/);
  const left = await listAppContainers(engine, app);
  assert.deepEqual(
    left.map((c) => c.service),
    ['db'],
    'web was never created',
  );
});

test('env values reach the container byte for byte', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const env: Record<string, string> = {
    QUOTES: `it's "quoted" \`back\``,
    DOLLAR: '$HOME ${PATH} $$ $(id)',
    HASH: 'a # not a comment',
    EQUALS: 'a=b==c=',
    NEWLINES: 'line1\nline2\r\n\nend\n',
    UNICODE: 'héllo wörld ☃ 🚀 日本語',
    SPACES: '  padded  ',
    EMPTY: '',
    BACKSLASH: 'C:\\path\\n\\t',
  };
  const p = await plan(
    app,
    `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "3600"]\n    environment:\n      FROM_FILE: "\${DOLLAR}"\n`,
    env,
  );
  const up = await stackUp(engine, p, { deploymentId: 'd1' });
  const id = up.services[0].containerId;
  await until('running', async () => (await engine.docker.getContainer(id).inspect()).State.Running);
  const { stdout, exitCode } = await execIn(engine, id, ['cat', '/proc/1/environ']);
  assert.equal(exitCode, 0);
  const seen = new Map<string, string>();
  for (const entry of stdout.toString('utf8').split('\0').filter(Boolean)) {
    const eq = entry.indexOf('=');
    seen.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  for (const [k, v] of Object.entries(env)) {
    assert.equal(seen.get(k), v, k);
    assert.ok(Buffer.from(seen.get(k)!, 'utf8').equals(Buffer.from(v, 'utf8')), `${k} bytes`);
  }
  assert.equal(seen.get('FROM_FILE'), env.DOLLAR, 'an interpolated value is not interpolated again');
});

test('a named volume survives a re-up and a remove without volumes', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const yaml = `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "3600"]\n    volumes: ["data:/data"]\nvolumes:\n  data: {}\n`;
  const p = await plan(app, yaml);
  let up = await stackUp(engine, p, { deploymentId: 'd1' });
  assert.equal(
    (await execIn(engine, up.services[0].containerId, ['sh', '-c', 'echo kept > /data/file'])).exitCode,
    0,
  );

  up = await stackUp(engine, p, { deploymentId: 'd2' });
  assert.equal(up.services[0].reused, false);
  assert.equal(
    (await execIn(engine, up.services[0].containerId, ['cat', '/data/file'])).stdout.toString(),
    'kept\n',
  );

  const removed = await stackRemove(engine, app, { volumes: false });
  assert.deepEqual(removed.keptVolumes, [volumeName(app, 'data')]);
  assert.deepEqual(removed.removedVolumes, []);
  const vol = await engine.docker.getVolume(volumeName(app, 'data')).inspect();
  assert.equal(vol.Labels['svc.app'], app);

  up = await stackUp(engine, p, { deploymentId: 'd3' });
  assert.equal(
    (await execIn(engine, up.services[0].containerId, ['cat', '/data/file'])).stdout.toString(),
    'kept\n',
  );

  const gone = await stackRemove(engine, app, { volumes: true });
  assert.deepEqual(gone.removedVolumes, [volumeName(app, 'data')]);
  await assert.rejects(
    engine.docker.getVolume(volumeName(app, 'data')).inspect(),
    (e: { statusCode?: number }) => e.statusCode === 404,
  );
});

// The parser is the gate: what it refuses never gets a plan, so never reaches the engine. That
// these inputs leave nothing behind through the real deployment path is proven in
// deploy-failures.test.ts; here each must be refused with an error finding, and a plan that the
// engine then refuses part-way must not be reported as up.
test('bad compose input is refused by the parser with an error naming the problem', () => {
  let laughs = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
  for (let i = 1; i < 10; i++)
    laughs += `a${i}: &a${i} [${Array(9)
      .fill(`*a${i - 1}`)
      .join(',')}]\n`;
  const inputs: Array<[string, RegExp]> = [
    ['services: [not yaml', /./],
    [
      `services:\n  web:\n    image: ${BASE_IMAGE}\n# ${'x'.repeat(1024 * 1024)}`,
      /large|size|bytes|MiB|KiB/i,
    ],
    [`${laughs}services:\n  web:\n    image: ${BASE_IMAGE}\n`, /./],
    [`services:\n  web:\n    image: ${BASE_IMAGE}\n    depends_on: [ghost]\nvolumes:\n  v: {}\n`, /ghost/],
    [
      `services:\n  a: {image: ${BASE_IMAGE}, depends_on: [b]}\n  b: {image: ${BASE_IMAGE}, depends_on: [a]}\n`,
      /cycle|circular/i,
    ],
    [`services:\n  web:\n    image: ${BASE_IMAGE}\n    privileged: true\n`, /privileged/],
  ];
  for (const [text, reason] of inputs) {
    const r = parseCompose(text);
    assert.equal(r.ok, false);
    const errors = r.findings.filter((f) => f.level === 'error');
    assert.ok(errors.length > 0, 'refused with an error finding');
    assert.ok(
      errors.some((f) => reason.test(JSON.stringify(f))),
      JSON.stringify(errors),
    );
  }
});

test('a stack the engine refuses part-way fails stackUp with the service named; stackRemove then leaves nothing', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const p = await plan(
    app,
    `
services:
  a:
    image: ${BASE_IMAGE}
    command: ["sleep", "600"]
    volumes: [data:/data]
  b:
    image: svc-test/never-built-${app}:none
    depends_on: [a]
volumes:
  data: {}
`,
  );
  await assert.rejects(stackUp(engine, p, { deploymentId: 'x' }), (e: Error) =>
    /never-built|No such image|not found/i.test(e.message),
  );
  assert.equal((await listAppContainers(engine, app)).length, 1, 'a was started before b failed');
  await stackRemove(engine, app, { volumes: true });
  assert.deepEqual(await listAppContainers(engine, app), []);
  assert.deepEqual(await engine.docker.listNetworks({ filters: { label: [`svc.app=${app}`] } }), []);
  assert.deepEqual(
    (await engine.docker.listVolumes({ filters: { label: [`svc.app=${app}`] } })).Volumes ?? [],
    [],
  );
});

test('stray containers with our naming but without our labels are never touched', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const stray = await engine.docker.createContainer({
    name: `svc-${app}-app-1`,
    Image: BASE_IMAGE,
    Cmd: ['sleep', '600'],
  });
  try {
    const p = await plan(app, `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "600"]\n`);
    const up = await stackUp(engine, p, { deploymentId: 'd1' });
    assert.equal(up.services[0].containerName, `svc-${app}-app-2`, 'the stray one keeps its name');
    await stackRemove(engine, app, { volumes: true });
    assert.equal((await stray.inspect()).Name, `/svc-${app}-app-1`);
  } finally {
    await stray.remove({ force: true, v: true });
  }
});

test('container state changes arrive through the event stream', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName();
  apps.add(app);
  const events: ContainerEvent[] = [];
  const ac = new AbortController();
  const following = followEvents(
    engine,
    (e) => {
      if (e.app === app) events.push(e);
    },
    ac.signal,
  );
  try {
    const p = await plan(
      app,
      `services:\n  app:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "600"]\n    healthcheck: { test: ["CMD", "true"], interval: 1s }\n`,
    );
    await stackUp(engine, p, { deploymentId: 'd1' });
    await until(
      'start and healthy events',
      async () => events.some((e) => e.action === 'start') && events.some((e) => e.status === 'healthy'),
    );
    await stackStop(engine, app);
    await until('die event', async () => events.some((e) => e.action === 'die'));
    const start = events.find((e) => e.action === 'start')!;
    assert.equal(start.service, 'app');
    assert.equal(start.container, `svc-${app}-app-1`);
    assert.equal(start.deployment, 'd1');
    assert.equal(start.status, 'running');
    assert.equal(events.find((e) => e.action === 'die')!.status, 'exited');
  } finally {
    ac.abort();
    await following;
  }
});

test('an unreachable engine is reported as EngineUnavailableError naming the socket', async () => {
  const dead = createEngine({ socketPath: '/nonexistent/docker.sock' });
  await assert.rejects(
    listServices(dead, 'x'),
    (e: unknown) => e instanceof EngineUnavailableError && /\/nonexistent\/docker\.sock/.test(e.message),
  );
  await assert.rejects(stackRemove(dead, 'x', { volumes: false }), EngineUnavailableError);
});
