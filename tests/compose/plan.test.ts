// Plan building needs no engine: env layering, env_file, symlink escapes, Docker-shaped options.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile, symlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCompose, singleServiceModel } from '../../lib/compose/index.js';
import { planStack, imageTag, containerName, networkName, volumeName } from '../../lib/docker/index.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-plan-'));
  await mkdir(join(dir, 'static'));
  await writeFile(join(dir, '.env.web'), 'FROM_FILE=file\nOVERRIDE=file\n');
  await symlink('/etc', join(dir, 'evil'));
  await mkdir(join(dir, 'web'));
});
after(() => rm(dir, { recursive: true, force: true }));

test('env layering: app env < env_file < environment; `- KEY` takes the app value', async () => {
  const m = parseCompose(`services:
  web:
    build: ./web
    env_file: .env.web
    environment:
      - OVERRIDE=compose
      - FROM_APP
      - MISSING
      - LITERAL=$$NOT
`).model!;
  const r = await planStack(m, { app: 'demo', env: { APP: 'a\nb', OVERRIDE: 'app', FROM_APP: 'x=y' }, workdir: dir });
  assert.ok(r.ok, JSON.stringify(r.findings));
  const web = r.plan.services[0];
  assert.deepEqual(web.env, ['APP=a\nb', 'OVERRIDE=compose', 'FROM_APP=x=y', 'FROM_FILE=file', 'LITERAL=$NOT']);
  assert.equal(web.image, null);
  assert.equal(web.build?.contextDir, join(dir, 'web'));
  assert.equal(web.build?.dockerfile, 'Dockerfile');
  const noInject = await planStack(m, { app: 'demo', env: { APP: '1', FROM_APP: '2' }, workdir: dir, injectAppEnv: false });
  assert.ok(noInject.ok);
  assert.deepEqual(noInject.plan.services[0].env, ['FROM_FILE=file', 'OVERRIDE=compose', 'FROM_APP=2', 'LITERAL=$NOT']);
});

test('relative binds resolve inside the working copy; a symlink out of it is refused', async () => {
  const ok = await planStack(parseCompose('services:\n  web:\n    image: a\n    volumes: ["./static:/s:ro", "./new/dir:/n"]\n').model!, { app: 'demo', workdir: dir });
  assert.ok(ok.ok, JSON.stringify(ok.findings));
  assert.deepEqual(ok.plan.services[0].config.HostConfig?.Mounts?.map((m) => [m.Type, m.Source, m.Target, m.ReadOnly]), [
    ['bind', join(dir, 'static'), '/s', true], ['bind', join(dir, 'new/dir'), '/n', false],
  ]);
  const bad = await planStack(parseCompose('services:\n  web:\n    image: a\n    volumes: ["./evil/passwd:/p"]\n').model!, { app: 'demo', workdir: dir });
  assert.equal(bad.ok, false);
  assert.match(bad.findings[0].message, /outside the app's working copy/);
  const badCtx = await planStack(parseCompose('services:\n  web:\n    build: ./evil\n').model!, { app: 'demo', workdir: dir });
  assert.equal(badCtx.ok, false);
  const noWorkdir = await planStack(parseCompose('services:\n  web:\n    image: a\n    volumes: ["./static:/s"]\n').model!, { app: 'demo' });
  assert.equal(noWorkdir.ok, false);
});

test('docker-shaped options: ports, healthcheck, limits, restart, networks, volumes', async () => {
  const m = parseCompose(`services:
  db:
    image: a
    healthcheck: { test: "true", interval: 2s, timeout: 1s, retries: 3, start_period: 1500ms }
    volumes: ["data:/var/lib/db"]
    networks: { back: { aliases: [database] } }
  web:
    image: a
    ports: ["8080", "127.0.0.1:9000:80/udp"]
    depends_on: { db: { condition: service_healthy } }
    deploy: { resources: { limits: { cpus: 1.5, memory: 64m } } }
    restart: unless-stopped
    networks: [default, back]
volumes: { data: {} }
networks: { back: {} }
`).model!;
  const r = await planStack(m, { app: 'demo', defaultHostIp: '127.0.0.1' });
  assert.ok(r.ok, JSON.stringify(r.findings));
  assert.deepEqual(r.plan.networks.map((n) => n.name).sort(), ['svc-demo', 'svc-demo_back']);
  assert.deepEqual(r.plan.volumes.map((v) => v.name), ['svc-demo_data']);
  const [db, web] = r.plan.services;
  assert.deepEqual(db.config.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 2e9, Timeout: 1e9, StartPeriod: 1.5e9, Retries: 3 });
  assert.equal(db.config.HostConfig?.Mounts?.[0].Source, 'svc-demo_data');
  assert.deepEqual(db.networks, [{ name: 'svc-demo_back', aliases: ['database'] }]);
  assert.deepEqual(web.config.HostConfig?.PortBindings, { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }], '80/udp': [{ HostIp: '127.0.0.1', HostPort: '9000' }] });
  assert.equal(web.publishesFixedHostPort, true);
  assert.equal(db.publishesFixedHostPort, false);
  assert.equal(web.config.HostConfig?.NanoCpus, 1.5e9);
  assert.equal(web.config.HostConfig?.Memory, 64 * 1024 * 1024);
  assert.deepEqual(web.config.HostConfig?.RestartPolicy, { Name: 'unless-stopped', MaximumRetryCount: 0 });
  assert.deepEqual(web.dependsOn, [{ service: 'db', condition: 'service_healthy' }]);
});

test('service_healthy on a service without healthcheck is an error', async () => {
  const r = await planStack(parseCompose('services:\n  a: {image: x, depends_on: {b: {condition: service_healthy}}}\n  b: {image: x}\n').model!, { app: 'demo' });
  assert.equal(r.ok, false);
  assert.equal(r.findings[0].key, 'depends_on.b');
});

test('single-service stacks and names', async () => {
  const img = await planStack(singleServiceModel({ image: 'nginx:1.27' }), { app: 'shop', env: { A: '1' } });
  assert.ok(img.ok);
  assert.equal(img.plan.services[0].name, 'app');
  assert.equal(img.plan.services[0].image, 'nginx:1.27');
  assert.deepEqual(img.plan.services[0].env, ['A=1']);
  const df = await planStack(singleServiceModel({ dockerfile: 'Dockerfile' }), { app: 'shop', workdir: dir });
  assert.ok(df.ok);
  assert.equal(df.plan.services[0].build?.contextDir, dir);
  assert.equal(imageTag('shop', 'app', 'D1x'), 'svc/shop-app:d1x');
  assert.equal(containerName('shop', 'app', 2), 'svc-shop-app-2');
  assert.equal(networkName('shop'), 'svc-shop');
  assert.equal(volumeName('shop', 'data'), 'svc-shop_data');
  await assert.rejects(planStack(singleServiceModel({ image: 'a' }), { app: 'Bad;Name' }), /invalid app name/);
});
