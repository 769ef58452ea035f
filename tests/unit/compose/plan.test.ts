// Plan building needs no engine: env layering, env_file, symlink escapes, Docker-shaped options.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile, symlink, rm, readFile, realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCompose, singleServiceModel } from '#lib/compose/index.js';
import { planStack, imageTag, containerName, networkName, volumeName } from '#lib/docker/index.js';
import { prepareBinds } from '#lib/deploy/mounts.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-plan-'));
  await mkdir(join(dir, 'static'));
  await writeFile(join(dir, '.env.web'), 'FROM_FILE=file\nOVERRIDE=file\n');
  await symlink('/etc', join(dir, 'evil'));
  await mkdir(join(dir, 'web'));
  await writeFile(join(dir, 'static', 'index.html'), 'hi\n');
  await writeFile(join(dir, 'conf.ini'), 'x=1\n');
  await mkdir(join(dir, '.git'));
  await writeFile(join(dir, '.git', 'config'), '[core]\n');
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
  const r = await planStack(m, {
    app: 'demo',
    env: { APP: 'a\nb', OVERRIDE: 'app', FROM_APP: 'x=y' },
    workdir: dir,
  });
  assert.ok(r.ok, JSON.stringify(r.findings));
  const web = r.plan.services[0];
  assert.deepEqual(web.env, [
    'APP=a\nb',
    'OVERRIDE=compose',
    'FROM_APP=x=y',
    'FROM_FILE=file',
    'LITERAL=$NOT',
  ]);
  assert.equal(web.image, null);
  assert.equal(web.build?.contextDir, join(dir, 'web'));
  assert.equal(web.build?.dockerfile, 'Dockerfile');
  const noInject = await planStack(m, {
    app: 'demo',
    env: { APP: '1', FROM_APP: '2' },
    workdir: dir,
    injectAppEnv: false,
  });
  assert.ok(noInject.ok);
  assert.deepEqual(noInject.plan.services[0].env, [
    'FROM_FILE=file',
    'OVERRIDE=compose',
    'FROM_APP=2',
    'LITERAL=$NOT',
  ]);
});

test('relative binds never mount the working copy: read-only from a copy without .git, writable ones get their own copy or a volume', async () => {
  const work = await mkdtemp(join(tmpdir(), 'svc-plan-work-'));
  try {
    const model = parseCompose(`services:
  web:
    image: a
    volumes: ["./static:/s:ro", "./new/dir:/n", "./static:/data", ".:/app", "./conf.ini:/etc/conf.ini", "./missing:/m:ro"]
  side:
    image: a
    volumes: ["./:/src:ro", "./new/dir/:/n2"]
`).model!;
    const lines: string[] = [];
    const binds = await prepareBinds({
      workRoot: work,
      appId: 'a1',
      deploymentId: 'd1',
      checkout: dir,
      model,
      log: (l) => lines.push(l),
    });
    const r = await planStack(model, { app: 'demo', workdir: dir, binds });
    assert.ok(r.ok, JSON.stringify(r.findings));
    const depDir = await realpath(join(work, 'a1', 'deployments', 'd1'));
    const src = join(depDir, 'src');
    const mounts = (name: string) =>
      r.plan.services
        .find((x) => x.name === name)!
        .config.HostConfig!.Mounts!.map((m) => [m.Type, m.Source, m.Target, !!m.ReadOnly]);
    const web = mounts('web');
    assert.deepEqual(web[0], ['bind', join(src, 'static'), '/s', true]);
    assert.deepEqual(web[1].slice(0, 1).concat(web[1].slice(2)), ['volume', '/n', false]);
    assert.match(web[1][1] as string, /^svc-demo__bind-new-dir-[0-9a-f]{8}$/);
    assert.match(web[2][1] as string, /^svc-demo__bind-static-[0-9a-f]{8}$/);
    assert.equal(web[3][0], 'bind');
    assert.match(web[3][1] as string, new RegExp(`^${depDir}/rw/root-[0-9a-f]{8}$`));
    assert.equal(web[3][3], false);
    assert.match(web[4][1] as string, new RegExp(`^${depDir}/rw/conf.ini-[0-9a-f]{8}$`));
    assert.deepEqual(web[5], ['bind', join(src, 'missing'), '/m', true]);
    assert.deepEqual(
      mounts('side'),
      [
        ['bind', src, '/src', true],
        ['volume', web[1][1], '/n2', false],
      ],
      'one volume per folder, shared like compose shares it',
    );
    // The checkout itself (the git working copy in production) is never a source.
    for (const m of [...web, ...mounts('side')]) assert.ok(!String(m[1]).startsWith(dir), String(m[1]));
    // Copies carry the files but no .git; the writable root copy is not the read-only tree.
    assert.equal(await readFile(join(src, 'conf.ini'), 'utf8'), 'x=1\n');
    await assert.rejects(stat(join(src, '.git')));
    await assert.rejects(stat(join(web[3][1] as string, '.git')));
    assert.equal(await readFile(join(web[3][1] as string, 'conf.ini'), 'utf8'), 'x=1\n');
    assert.equal(await readFile(web[4][1] as string, 'utf8'), 'x=1\n');
    // Volumes: seeded from the repository's folder when it has one.
    const vols = Object.fromEntries(r.plan.volumes.map((v) => [v.name, v]));
    assert.equal(vols[web[2][1] as string].seed, join(src, 'static'));
    assert.equal(vols[web[1][1] as string].seed, undefined);
    assert.equal(vols[web[1][1] as string].labels['svc.bind'], './new/dir');
    assert.ok(
      lines.some((l) => /\.\/static \(writable folder\).*later commits do not change it/.test(l)),
      lines.join('\n'),
    );

    const bad = parseCompose('services:\n  web:\n    image: a\n    volumes: ["./evil/passwd:/p"]\n').model!;
    const badPlan = await planStack(bad, {
      app: 'demo',
      workdir: dir,
      binds: await prepareBinds({
        workRoot: work,
        appId: 'a1',
        deploymentId: 'd2',
        checkout: dir,
        model: bad,
        log: () => {},
      }),
    });
    assert.equal(badPlan.ok, false);
    assert.match(badPlan.ok ? '' : badPlan.findings[0].message, /outside the repository/);
    const badCtx = await planStack(parseCompose('services:\n  web:\n    build: ./evil\n').model!, {
      app: 'demo',
      workdir: dir,
    });
    assert.equal(badCtx.ok, false);
    const noBinds = await planStack(
      parseCompose('services:\n  web:\n    image: a\n    volumes: ["./static:/s"]\n').model!,
      { app: 'demo', workdir: dir },
    );
    assert.equal(
      noBinds.ok,
      false,
      'a relative bind without a prepared copy is refused, never taken from the working copy',
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('absolute binds: the real path goes to the engine, re-checked against the roots; a writable bind above another is refused', async () => {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'svc-plan-root-')));
  try {
    await mkdir(join(root, 'a', 'b'), { recursive: true });
    await symlink('/', join(root, 'toroot'));
    await symlink(join(root, 'a'), join(root, 'alias'));
    const plan = (yaml: string) =>
      planStack(parseCompose(yaml, { allowedBindRoots: [root] }).model!, {
        app: 'demo',
        allowedBindRoots: [root],
      });
    const ok = await plan(`services:\n  web:\n    image: a\n    volumes: ["${root}/alias/b:/b:ro"]\n`);
    assert.ok(ok.ok, JSON.stringify(ok.findings));
    assert.equal(
      ok.plan.services[0].config.HostConfig!.Mounts![0].Source,
      join(root, 'a', 'b'),
      'the resolved path, not the symlink',
    );
    const escape = await plan(`services:\n  web:\n    image: a\n    volumes: ["${root}/toroot:/host:ro"]\n`);
    assert.equal(escape.ok, false);
    assert.match(escape.ok ? '' : escape.findings[0].message, /outside the allowed roots/);
    const above = await plan(
      `services:\n  w:\n    image: a\n    volumes: ["${root}/a:/w"]\n  v:\n    image: a\n    volumes: ["${root}/a/b:/target:ro"]\n`,
    );
    assert.equal(above.ok, false);
    assert.match(above.ok ? '' : above.findings[0].message, /inside .* which w mounts writable/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
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
  assert.deepEqual(
    r.plan.volumes.map((v) => v.name),
    ['svc-demo_data'],
  );
  const [db, web] = r.plan.services;
  assert.deepEqual(db.config.Healthcheck, {
    Test: ['CMD-SHELL', 'true'],
    Interval: 2e9,
    Timeout: 1e9,
    StartPeriod: 1.5e9,
    Retries: 3,
  });
  assert.equal(db.config.HostConfig?.Mounts?.[0].Source, 'svc-demo_data');
  assert.deepEqual(db.networks, [{ name: 'svc-demo_back', aliases: ['database'] }]);
  assert.deepEqual(web.config.HostConfig?.PortBindings, {
    '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }],
    '80/udp': [{ HostIp: '127.0.0.1', HostPort: '9000' }],
  });
  assert.equal(web.publishesFixedHostPort, true);
  assert.equal(db.publishesFixedHostPort, false);
  assert.equal(web.config.HostConfig?.NanoCpus, 1.5e9);
  assert.equal(web.config.HostConfig?.Memory, 64 * 1024 * 1024);
  assert.deepEqual(web.config.HostConfig?.RestartPolicy, { Name: 'unless-stopped', MaximumRetryCount: 0 });
  assert.deepEqual(web.dependsOn, [{ service: 'db', condition: 'service_healthy' }]);
});

test('service_healthy on a service without healthcheck is an error', async () => {
  const r = await planStack(
    parseCompose(
      'services:\n  a: {image: x, depends_on: {b: {condition: service_healthy}}}\n  b: {image: x}\n',
    ).model!,
    { app: 'demo' },
  );
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
  await assert.rejects(
    planStack(singleServiceModel({ image: 'a' }), { app: 'Bad;Name' }),
    /invalid app name/,
  );
});
