// The apps API over the real server and the real Docker engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestServer, adminClient, Client, reveal, type TestServer } from '../_support/server.js';
import { needDocker, ensureBaseImage, BASE_IMAGE } from '../_support/docker.js';
import { startGitServer, type GitServer } from '../_support/gitserver.js';
import { execIn, until } from './_helpers.js';
import { listAppContainers, stackRemove } from '#lib/docker/index.js';

const run = promisify(execFile);
const WEB_IMAGE = 'svc-test/web:apps-api';
const WEB_IMAGE_V2 = 'svc-test/web:apps-api-v2';
let s: TestServer;
let c: Client;
let git: GitServer;
let ready = false;
const made: string[] = [];

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
  git = await startGitServer();
});
after(async () => {
  for (const name of made) await stackRemove(s.env.engine, name, { volumes: true }).catch(() => {});
  await git.stop();
  await s.stop();
});

async function engineReady(t: Parameters<typeof needDocker>[0]): Promise<boolean> {
  if (!(await needDocker(t))) return false;
  if (!ready) {
    await ensureBaseImage();
    // An image app needs an image with a command: a busybox web server.
    await run('sh', [
      '-c',
      'printf "FROM %s\\nRUN mkdir -p /www && echo hello > /www/index.html\\nCMD [\\"httpd\\", \\"-f\\", \\"-p\\", \\"8080\\", \\"-h\\", \\"/www\\"]\\n" "$1" | docker build -q -t "$2" -',
      'sh',
      BASE_IMAGE,
      WEB_IMAGE,
    ]);
    await run('docker', ['tag', WEB_IMAGE, WEB_IMAGE_V2]);
    ready = true;
  }
  return true;
}

const uniq = () => `a-${Math.random().toString(36).slice(2, 8)}`;

async function createImageApp(): Promise<{ id: string; name: string }> {
  const name = uniq();
  made.push(name);
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: WEB_IMAGE } });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

test('bad app input is a 400 naming the field, and leaves no row behind', async () => {
  const before = (await c.req('GET', '/api/apps')).body.items.length;
  const names = ['bad;name', '../x', 'UPPER', 'x'.repeat(64), '-lead', '', 'a b', 'control'];
  for (const name of names) {
    const r = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: 'nginx:1' } });
    assert.equal(r.status, 400, name);
    assert.equal(r.body.details[0].field, 'name', name);
  }
  const urls = [
    'https://x.example/$(id).git',
    'https://x.example/`id`.git',
    'https://x.example/a;b.git',
    'file:///etc/passwd',
    'ext::sh -c id',
    '-uhttps://x',
    'https://u:secret@x.example/r.git',
    'https://x.example/a b.git',
  ];
  for (const repo_url of urls) {
    const r = await c.req('POST', '/api/apps', {
      name: uniq(),
      source: { type: 'git', repo_url, branch: 'main' },
    });
    assert.equal(r.status, 400, repo_url);
    assert.equal(r.body.details[0].field, 'source.repo_url', repo_url);
    assert.equal(r.text.includes('secret'), false);
  }
  for (const branch of ['--upload-pack=x', 'main;id', 'a..b', 'main\nid', '/abs', '-x']) {
    const r = await c.req('POST', '/api/apps', {
      name: uniq(),
      source: { type: 'git', repo_url: 'https://git.example/r.git', branch },
    });
    assert.equal(r.status, 400, branch);
    assert.equal(r.body.details[0].field, 'source.branch', branch);
  }
  const img = await c.req('POST', '/api/apps', {
    name: uniq(),
    source: { type: 'image', image: '--privileged' },
  });
  assert.equal(img.status, 400);
  assert.equal((await c.req('GET', '/api/apps')).body.items.length, before);
  const dup = await createImageApp();
  const again = await c.req('POST', '/api/apps', {
    name: dup.name,
    source: { type: 'image', image: WEB_IMAGE },
  });
  assert.equal(again.status, 409);
  assert.equal((await c.req('PATCH', `/api/apps/${dup.id}`, { name: 'renamed' })).status, 400);
  assert.equal((await c.req('GET', '/api/apps/nope')).status, 400);
  assert.equal((await c.req('GET', '/api/apps/01m7xsp88xare7pbe7126vxpxd')).status, 404);
});

const TRICKY: Record<string, string> = {
  QUOTES: `it's "quoted"`,
  DOLLAR: '$HOME ${PATH} $$ `id`',
  HASH: 'a # not a comment',
  EQUALS: 'a=b=c',
  NEWLINES: 'line1\nline2\r\nline3',
  UNICODE: 'héllo wörld ✓ 日本',
  EMPTY: '',
};

test('env: sealed at rest, secrets redacted in the listing, reveal is audited, null keeps a value; bad keys are 400', async () => {
  const app = await createImageApp();
  const items = Object.entries(TRICKY).map(([key, value], i) => ({ key, value, secret: i % 2 === 0 }));
  const put = await c.req('PUT', `/api/apps/${app.id}/env`, { items });
  assert.equal(put.status, 200, put.text);
  const list = (await c.req('GET', `/api/apps/${app.id}/env`)).body.items as Array<{
    key: string;
    secret: boolean;
    value: string | null;
  }>;
  for (const it of list) {
    if (it.secret) assert.equal(it.value, null, it.key);
    else assert.equal(it.value, TRICKY[it.key], it.key);
  }
  const rows = await s.env.db.selectFrom('app_env').selectAll().where('app_id', '=', app.id).execute();
  for (const r of rows) {
    assert.ok(r.sealed.startsWith('v1.'));
    if (TRICKY[r.key]!.length > 3) assert.equal(r.sealed.includes(TRICKY[r.key]!), false);
  }
  const rev = await reveal(c, app.id, 'QUOTES');
  assert.deepEqual(rev.body, { key: 'QUOTES', value: TRICKY.QUOTES });
  const audit = (await c.req('GET', '/api/audit?limit=5')).body.items;
  const entry = audit.find((a: { action: string }) => a.action === 'GET /api/apps/{id}/env/{key}/reveal');
  assert.ok(entry);
  assert.equal(entry.event, 'app.env_revealed');
  assert.deepEqual(entry.target, { type: 'app', id: app.id });
  assert.equal(JSON.stringify(entry).includes(TRICKY.QUOTES!), false);
  // Resubmitting the redacted listing keeps every value.
  const keep = await c.req('PUT', `/api/apps/${app.id}/env`, {
    items: list.map((i) => ({ key: i.key, value: i.value, secret: i.secret })),
  });
  assert.equal(keep.status, 200);
  assert.equal((await reveal(c, app.id, 'QUOTES')).body.value, TRICKY.QUOTES);
  for (const key of ['A=B', 'has space', '1LEAD', '', 'x-y']) {
    const r = await c.req('PUT', `/api/apps/${app.id}/env`, { items: [{ key, value: 'v' }] });
    assert.equal(r.status, 400, key);
    assert.match(r.body.details[0].field, /^items\.0\.key$/);
  }
  const newNull = await c.req('PUT', `/api/apps/${app.id}/env`, {
    items: [{ key: 'BRAND_NEW', value: null }],
  });
  assert.equal(newNull.status, 400);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/env`)).body.items.length, Object.keys(TRICKY).length);
  assert.equal((await reveal(c, app.id, 'NOPE')).status, 404);
});

test('an image app comes up, its env reaches the container byte for byte, and its services follow start/stop/restart', async (t) => {
  if (!(await engineReady(t))) return;
  const app = await createImageApp();
  const env = await c.req('PUT', `/api/apps/${app.id}/env`, {
    items: Object.entries(TRICKY).map(([key, value]) => ({ key, value })),
  });
  assert.equal(env.status, 200, env.text);
  const events: any[] = [];
  s.env.bus.onAny(
    (e) => e.topic === 'apps' && (e.data as { app?: string }).app === app.name && events.push(e.data),
  );
  const start = await c.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(start.status, 200, start.text);
  const svc = await until('service running', async () => {
    const r = await c.req('GET', `/api/apps/${app.id}/services`);
    return r.body.items.find((x: { status: string }) => x.status === 'running');
  });
  assert.equal(svc.name, 'app');
  assert.equal(svc.image, WEB_IMAGE);
  const [container] = await listAppContainers(s.env.engine, app.name);
  // The main process's environment, exactly as the kernel holds it: NUL-separated KEY=value.
  const environ = (await execIn(s.env.engine, container!.id, ['cat', '/proc/1/environ'])).stdout
    .toString('utf8')
    .split('\0');
  for (const [key, value] of Object.entries(TRICKY)) assert.ok(environ.includes(`${key}=${value}`), key);
  await until('status event', async () => events.some((e) => e.type === 'container' && e.action === 'start'));
  assert.equal((await c.req('POST', `/api/apps/${app.id}/stop`)).status, 200);
  await until(
    'stopped',
    async () => (await c.req('GET', `/api/apps/${app.id}/services`)).body.items[0].status === 'exited',
  );
  await until(
    'app status stopped',
    async () => (await c.req('GET', `/api/apps/${app.id}`)).body.app.status === 'stopped',
  );
  assert.equal((await c.req('POST', `/api/apps/${app.id}/services/app/start`)).status, 200);
  await until(
    'running again',
    async () => (await c.req('GET', `/api/apps/${app.id}/services`)).body.items[0].status === 'running',
  );
  assert.equal((await c.req('POST', `/api/apps/${app.id}/services/app/restart`)).status, 200);
  assert.equal((await c.req('POST', `/api/apps/${app.id}/services/nope/restart`)).status, 404);
  const patched = await c.req('PATCH', `/api/apps/${app.id}/services/app`, {
    port: 8080,
    health_path: '/index.html',
  });
  assert.equal(patched.status, 200);
  assert.equal((await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 70000 })).status, 400);
  assert.equal(
    (await c.req('PATCH', `/api/apps/${app.id}/services/app`, { health_path: 'no-slash' })).status,
    400,
  );
  const listed = (await c.req('GET', `/api/apps/${app.id}/services`)).body.items[0];
  assert.equal(listed.port, 8080);
  assert.equal(listed.health_path, '/index.html');
});

test('app restart, per-service stop and a successful PATCH of the app, against the engine', async (t) => {
  if (!(await engineReady(t))) return;
  const app = await createImageApp();
  const started = await c.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(started.status, 200, started.text);
  const [first] = await until('one running container', async () => {
    const list = await listAppContainers(s.env.engine, app.name);
    return list.length === 1 && list[0]!.state === 'running' ? list : null;
  });
  const startedAt = async (id: string) =>
    (await s.env.engine.docker.getContainer(id).inspect()).State.StartedAt;
  const before = await startedAt(first!.id);

  const restarted = await c.req('POST', `/api/apps/${app.id}/restart`);
  assert.equal(restarted.status, 200, restarted.text);
  assert.deepEqual(restarted.body.containers, [first!.name]);
  // The same container, started again (a restart is not a re-creation).
  const info = await s.env.engine.docker.getContainer(first!.id).inspect();
  assert.equal(info.State.Running, true);
  assert.notEqual(await startedAt(first!.id), before);

  const stopped = await c.req('POST', `/api/apps/${app.id}/services/app/stop`);
  assert.equal(stopped.status, 200, stopped.text);
  assert.deepEqual(stopped.body.containers, [first!.name]);
  assert.equal((await s.env.engine.docker.getContainer(first!.id).inspect()).State.Running, false);
  assert.equal((await c.req('GET', `/api/apps/${app.id}`)).body.app.status, 'stopped');
  assert.equal((await c.req('POST', `/api/apps/${app.id}/services/nope/stop`)).status, 404);

  // PATCH: a new source takes effect with the next deployment.
  const patched = await c.req('PATCH', `/api/apps/${app.id}`, {
    name: app.name,
    source: { type: 'image', image: WEB_IMAGE_V2 },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(patched.body.app.source, { type: 'image', image: WEB_IMAGE_V2 });
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}`)).body.app.source, {
    type: 'image',
    image: WEB_IMAGE_V2,
  });
  const bad = await c.req('PATCH', `/api/apps/${app.id}`, {
    source: { type: 'image', image: '--privileged' },
  });
  assert.equal(bad.status, 400);
  assert.equal((await c.req('GET', `/api/apps/${app.id}`)).body.app.source.image, WEB_IMAGE_V2);
  const dep = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(dep.status, 202, dep.text);
  const done = await until(
    'deployment finished',
    async () => {
      const d = (await c.req('GET', `/api/apps/${app.id}/deployments/${dep.body.deployment.id}`)).body
        .deployment;
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) ? d : null;
    },
    240_000,
  );
  assert.equal(done.status, 'succeeded', done.error);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/services`)).body.items[0].image, WEB_IMAGE_V2);
  const audit = (await c.req('GET', '/api/audit?limit=50')).body.items;
  assert.ok(
    audit.some(
      (a: { action: string; target: { id: string } }) =>
        a.action === 'PATCH /api/apps/{id}' && a.target.id === app.id,
    ),
  );
});

test('an image without a command (an imported root fs) fails with a readable reason: start, deployment and app status', async (t) => {
  if (!(await engineReady(t))) return;
  const name = uniq();
  made.push(name);
  // BASE_IMAGE is a root file system imported with `docker import`: no CMD, no ENTRYPOINT.
  const created = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: BASE_IMAGE } });
  assert.equal(created.status, 201, created.text);
  const app = created.body.app;
  const reason = new RegExp(`image "${BASE_IMAGE}" has no command \\(neither CMD nor ENTRYPOINT\\)`);
  const start = await c.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(start.status, 409, start.text);
  assert.match(start.body.error, reason);
  const dep = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(dep.status, 202, dep.text);
  const done = await until(
    'deployment finished',
    async () => {
      const d = (await c.req('GET', `/api/apps/${app.id}/deployments/${dep.body.deployment.id}`)).body
        .deployment;
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status) ? d : null;
    },
    120_000,
  );
  assert.equal(done.status, 'failed');
  assert.match(done.error, reason);
  assert.doesNotMatch(done.error, /HTTP code|bad parameter/);
  const logs = (await c.req('GET', `/api/apps/${app.id}/deployments/${done.id}/logs`)).body.items
    .map((l: { line: string }) => l.line)
    .join('\n');
  assert.match(logs, reason);
  assert.equal((await c.req('GET', `/api/apps/${app.id}`)).body.app.status, 'failed');
  assert.equal((await listAppContainers(s.env.engine, name)).length, 0);
});

test('PATCH of a service the app does not have is a 404 and stores nothing', async (t) => {
  if (!(await needDocker(t))) return;
  const image = await createImageApp();
  const gitName = uniq();
  made.push(gitName);
  const gitApp = await c.req('POST', '/api/apps', {
    name: gitName,
    source: { type: 'git', repo_url: 'https://git.example/r.git', branch: 'main' },
  });
  assert.equal(gitApp.status, 201, gitApp.text);
  for (const app of [image, gitApp.body.app]) {
    const phantom = await c.req('PATCH', `/api/apps/${app.id}/services/nope`, { port: 8080 });
    assert.equal(phantom.status, 404, phantom.text);
    assert.equal(phantom.body.code, 'not_found');
    // The single service of an image app, or of a Dockerfile repository before its first deployment.
    const single = await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' });
    assert.equal(single.status, 200, single.text);
    const rows = await s.env.db
      .selectFrom('app_services')
      .select('name')
      .where('app_id', '=', app.id)
      .execute();
    assert.deepEqual(
      rows.map((r) => r.name),
      ['app'],
    );
    assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/export`)).body.services, {
      app: { port: 8080, health_path: '/' },
    });
  }
});

test('import with an invalid health_path or port is a 400 naming the field, and creates nothing', async () => {
  const before = (await c.req('GET', '/api/apps')).body.items.length;
  const spec = {
    name: uniq(),
    source: { type: 'image', image: WEB_IMAGE },
    services: { app: { port: 8080, health_path: 'no-slash' } },
  };
  const r = await c.req('POST', '/api/apps/import', spec);
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.code, 'bad_request');
  assert.equal(r.body.details[0].field, 'services.app.health_path');
  const port = await c.req('POST', '/api/apps/import', {
    ...spec,
    services: { app: { port: 0, health_path: '/' } },
  });
  assert.equal(port.status, 400, port.text);
  assert.equal(port.body.details[0].field, 'services.app.port');
  assert.equal((await c.req('GET', '/api/apps')).body.items.length, before);
});

test('delete needs a step-up, removes containers and network, keeps volumes unless asked, and is retryable', async (t) => {
  if (!(await engineReady(t))) return;
  const app = await createImageApp();
  const started = await c.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(started.status, 200, started.text);
  // A named volume of the app (as a compose app would have), to see it kept.
  await run('docker', [
    'volume',
    'create',
    '--label',
    `svc.app=${app.name}`,
    '--label',
    'svc.managed=true',
    '--label',
    `svc.instance=${s.env.engine.owner.instanceId}`,
    `svc-${app.name}_data`,
  ]);
  const denied = await c.req('DELETE', `/api/apps/${app.id}`);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.code, 'step_up_required');
  assert.equal(
    (await c.req('POST', '/api/auth/step-up', { password: 'correct horse battery staple' })).status,
    200,
  );
  const del = await c.req('DELETE', `/api/apps/${app.id}`);
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.body.kept_volumes, [`svc-${app.name}_data`]);
  assert.equal((await listAppContainers(s.env.engine, app.name)).length, 0);
  assert.equal((await c.req('GET', `/api/apps/${app.id}`)).status, 404);
  assert.equal(
    (await s.env.db.selectFrom('app_env').selectAll().where('app_id', '=', app.id).execute()).length,
    0,
  );
  await run('docker', ['volume', 'inspect', `svc-${app.name}_data`]);
  // Deleting again with ?volumes=true through a fresh app of the same name removes the volume.
  const again = await c.req('POST', '/api/apps', {
    name: app.name,
    source: { type: 'image', image: WEB_IMAGE },
  });
  assert.equal(again.status, 201, again.text);
  const del2 = await c.req('DELETE', `/api/apps/${again.body.app.id}?volumes=true`);
  assert.equal(del2.status, 200, del2.text);
  assert.deepEqual(del2.body.removed_volumes, [`svc-${app.name}_data`]);
  await assert.rejects(run('docker', ['volume', 'inspect', `svc-${app.name}_data`]));
  assert.equal((await c.req('DELETE', `/api/apps/${again.body.app.id}?volumes=maybe`)).status, 400);
});

test('delete detaches a container svc does not manage from the app network, never stops it, and removes everything the app owns', async (t) => {
  if (!(await engineReady(t))) return;
  const app = await createImageApp();
  const started = await c.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(started.status, 200, started.text);
  const foreign = `svc-foreign-${Math.random().toString(36).slice(2, 8)}`;
  await run('docker', [
    'run',
    '-d',
    '--name',
    foreign,
    '--label',
    'svc.test=foreign',
    BASE_IMAGE,
    'sleep',
    '600',
  ]);
  try {
    await run('docker', ['network', 'connect', `svc-${app.name}`, foreign]);
    assert.equal(
      (await c.req('POST', '/api/auth/step-up', { password: 'correct horse battery staple' })).status,
      200,
    );
    const del = await c.req('DELETE', `/api/apps/${app.id}`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body.detached_containers, [foreign]);
    assert.equal(
      (await run('docker', ['inspect', '-f', '{{.State.Running}}', foreign])).stdout.trim(),
      'true',
    );
    await assert.rejects(run('docker', ['network', 'inspect', `svc-${app.name}`]));
    assert.equal((await listAppContainers(s.env.engine, app.name)).length, 0);
    assert.equal((await c.req('GET', `/api/apps/${app.id}`)).status, 404);
    assert.equal((await c.req('DELETE', `/api/apps/${app.id}`)).status, 404);
  } finally {
    await run('docker', ['rm', '-f', foreign]).catch(() => {});
  }
});

test('a delete that cannot finish (a foreign container uses the app volume) says what is left, and a repeat finishes it', async (t) => {
  if (!(await engineReady(t))) return;
  const app = await createImageApp();
  const started = await c.req('POST', `/api/apps/${app.id}/start`);
  assert.equal(started.status, 200, started.text);
  const volume = `svc-${app.name}_data`;
  await run('docker', [
    'volume',
    'create',
    '--label',
    `svc.app=${app.name}`,
    '--label',
    'svc.managed=true',
    '--label',
    `svc.instance=${s.env.engine.owner.instanceId}`,
    volume,
  ]);
  const foreign = `svc-foreign-${Math.random().toString(36).slice(2, 8)}`;
  await run('docker', [
    'run',
    '-d',
    '--name',
    foreign,
    '--label',
    'svc.test=foreign',
    '-v',
    `${volume}:/data`,
    BASE_IMAGE,
    'sleep',
    '600',
  ]);
  try {
    assert.equal(
      (await c.req('POST', '/api/auth/step-up', { password: 'correct horse battery staple' })).status,
      200,
    );
    const first = await c.req('DELETE', `/api/apps/${app.id}?volumes=true`);
    assert.equal(first.status, 409, first.text);
    assert.match(first.body.error, new RegExp(`volume "${volume}" is in use by container ${foreign}`));
    // Half-way: containers and network are gone, the foreign container untouched, the volume kept.
    assert.equal((await listAppContainers(s.env.engine, app.name)).length, 0);
    await assert.rejects(run('docker', ['network', 'inspect', `svc-${app.name}`]));
    assert.equal(
      (await run('docker', ['inspect', '-f', '{{.State.Running}}', foreign])).stdout.trim(),
      'true',
    );
    await run('docker', ['rm', '-f', foreign]);
    const again = await c.req('DELETE', `/api/apps/${app.id}?volumes=true`);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body.removed_volumes, [volume]);
    await assert.rejects(run('docker', ['volume', 'inspect', volume]));
    assert.equal(
      (await s.env.db.selectFrom('apps').select('id').where('id', '=', app.id).execute()).length,
      0,
    );
  } finally {
    await run('docker', ['rm', '-f', foreign]).catch(() => {});
    await run('docker', ['volume', 'rm', volume]).catch(() => {});
  }
});

test('export then import recreates the app with its settings, without secret values', async () => {
  const app = await createImageApp();
  const env = await c.req('PUT', `/api/apps/${app.id}/env`, {
    items: [
      { key: 'PUBLIC', value: 'shown', secret: false },
      { key: 'TOKEN', value: 'hidden-value', secret: true },
    ],
  });
  assert.equal(env.status, 200, env.text);
  const patched = await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080 });
  assert.equal(patched.status, 200, patched.text);
  const spec = (await c.req('GET', `/api/apps/${app.id}/export`)).body;
  assert.equal(JSON.stringify(spec).includes('hidden-value'), false);
  assert.deepEqual(spec.env, { PUBLIC: 'shown', TOKEN: '${TOKEN}' });
  const copyName = uniq();
  made.push(copyName);
  const imp = await c.req('POST', '/api/apps/import', { ...spec, name: copyName });
  assert.equal(imp.status, 201, imp.text);
  assert.deepEqual(imp.body.missing_secrets, ['TOKEN']);
  const copy = imp.body.app;
  assert.deepEqual(copy.source, spec.source);
  const exported = (await c.req('GET', `/api/apps/${copy.id}/export`)).body;
  assert.deepEqual(exported.services, spec.services);
  assert.deepEqual(exported.env, { PUBLIC: 'shown' });
  assert.equal((await c.req('POST', '/api/apps/import', { ...spec, name: copyName })).status, 409);
  assert.equal((await c.req('POST', '/api/apps/import', { ...spec, version: 9 })).status, 400);
});

test('detect-compose and env-example clone the repository into a temporary directory and report', async (t) => {
  if (!(await needDocker(t))) return;
  await git.commit('probe', {
    'compose.yaml': 'services:\n  web:\n    image: nginx:1\n    privileged: true\n  worker:\n    build: .\n',
    Dockerfile: 'FROM scratch\n',
    '.env.example': '# comment\nDATABASE_URL=postgres://db/app\nexport MODE="prod"\n',
  });
  const name = uniq();
  const createdProbe = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git.url('probe'), branch: 'main' },
  });
  assert.equal(createdProbe.status, 201, createdProbe.text);
  const app = createdProbe.body.app;
  const d = await c.req('POST', `/api/apps/${app.id}/detect-compose`);
  assert.equal(d.status, 200, d.text);
  assert.equal(d.body.compose_path, 'compose.yaml');
  assert.deepEqual(d.body.services.sort(), ['web', 'worker']);
  assert.ok(
    d.body.findings.some(
      (f: { service?: string; key: string; level: string }) =>
        f.service === 'web' && f.key === 'privileged' && f.level === 'error',
    ),
  );
  const e = await c.req('POST', `/api/apps/${app.id}/env-example`);
  assert.deepEqual(e.body.items, [
    { key: 'DATABASE_URL', value: 'postgres://db/app' },
    { key: 'MODE', value: 'prod' },
  ]);
  const createdMissing = await c.req('POST', '/api/apps', {
    name: uniq(),
    source: { type: 'git', repo_url: git.url('missing'), branch: 'main' },
  });
  assert.equal(createdMissing.status, 201, createdMissing.text);
  const missing = createdMissing.body.app;
  const bad = await c.req('POST', `/api/apps/${missing.id}/detect-compose`);
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /clone/);
  const image = await createImageApp();
  assert.equal((await c.req('POST', `/api/apps/${image.id}/detect-compose`)).status, 400);
});

test('with the engine unreachable the API keeps serving and engine operations answer 503 naming the socket', async () => {
  const down = await startTestServer({ SVC_DOCKER_SOCKET: '/nonexistent/docker.sock' });
  try {
    const dc = await adminClient(down);
    const created = await dc.req('POST', '/api/apps', {
      name: 'offline',
      source: { type: 'image', image: WEB_IMAGE },
    });
    assert.equal(created.status, 201, created.text);
    const app = created.body.app;
    const r = await dc.req('GET', `/api/apps/${app.id}/services`);
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'service_unavailable');
    assert.match(r.body.error, /\/nonexistent\/docker\.sock/);
    assert.equal((await dc.req('POST', `/api/apps/${app.id}/start`)).status, 503);
    assert.equal((await dc.req('GET', '/api/health')).status, 200);
    assert.equal((await dc.req('GET', `/api/apps/${app.id}`)).status, 200);
  } finally {
    await down.stop();
  }
});

test('without SVC_MASTER_KEY a key is generated beside the data, and env values are sealed with it, never stored in clear', async () => {
  const nokey = await startTestServer({ SVC_MASTER_KEY: '' });
  try {
    const k = await adminClient(nokey);
    const created = await k.req('POST', '/api/apps', {
      name: 'nokey',
      source: { type: 'image', image: WEB_IMAGE },
    });
    assert.equal(created.status, 201, created.text);
    const app = created.body.app;
    const r = await k.req('PUT', `/api/apps/${app.id}/env`, {
      items: [{ key: 'A', value: 'plain-value-7731', secret: true }],
    });
    assert.equal(r.status, 200, r.text);
    const { stat } = await import('node:fs/promises');
    const { join } = await import('node:path');
    assert.equal((await stat(join(nokey.dataDir, 'master.key'))).mode & 0o777, 0o600);
    const rows = await nokey.env.db.selectFrom('app_env').selectAll().execute();
    assert.equal(JSON.stringify(rows).includes('plain-value-7731'), false, 'the value is sealed at rest');
  } finally {
    await nokey.stop();
  }
});
