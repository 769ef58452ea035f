import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needEngine, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import { parseCompose } from '#lib/compose/index.js';
import {
  createEngine,
  planStack,
  stackUp,
  buildImage,
  buildLabels,
  imageTag,
  StackError,
} from '#lib/docker/index.js';
import { appName, cleanup, execIn } from './_helpers.js';

const engine = createEngine({ socketPath: DOCKER_SOCKET });
const apps = new Set<string>();
const tags: string[] = [];
let dir = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-build-'));
});
after(async () => {
  await cleanup(engine, apps);
  for (const t of tags)
    await engine.docker
      .getImage(t)
      .remove({ force: true, v: true })
      .catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

test('a compose build service is built from a tar context honouring .dockerignore, then run', async (t) => {
  if (!(await needEngine(t))) return;
  const app = appName('b');
  apps.add(app);
  await mkdir(join(dir, 'svc', 'sub'), { recursive: true });
  await writeFile(
    join(dir, 'svc', 'Dockerfile.web'),
    `FROM ${BASE_IMAGE}\nARG GREETING\nRUN echo "$GREETING" > /greeting\nCOPY . /ctx\nCMD ["sleep", "600"]\n`,
  );
  await writeFile(join(dir, 'svc', '.dockerignore'), 'secret.txt\n*.log\n');
  await writeFile(join(dir, 'svc', 'keep.txt'), 'kept');
  await writeFile(join(dir, 'svc', 'secret.txt'), 'never sent');
  await writeFile(join(dir, 'svc', 'debug.log'), 'noise');
  await writeFile(join(dir, 'svc', 'sub', 'nested.txt'), 'nested');
  const parsed = parseCompose(
    'services:\n  web:\n    build:\n      context: ./svc\n      dockerfile: Dockerfile.web\n      args: { GREETING: "${HELLO}" }\n',
    { env: { HELLO: 'hi $there' } },
  );
  assert.ok(parsed.ok);
  const plan = await planStack(parsed.model!, { app, workdir: dir });
  assert.ok(plan.ok, JSON.stringify(plan.findings));
  const svc = plan.plan.services[0];
  const tag = imageTag(app, 'web', 'dep1');
  tags.push(tag);
  const lines: string[] = [];
  const { imageId } = await buildImage(engine, {
    ...svc.build!,
    tag,
    labels: buildLabels(app, 'web', 'dep1'),
    onLog: (l) => lines.push(l),
  });
  assert.match(imageId, /^sha256:/);
  assert.ok(
    lines.some((l) => /Step 1\/|FROM/.test(l)),
    lines.join('\n'),
  );
  const img = await engine.docker.getImage(tag).inspect();
  assert.equal(img.Config.Labels?.['svc.app'], app);

  const up = await stackUp(engine, plan.plan, { deploymentId: 'dep1' });
  const id = up.services[0].containerId;
  const ls = await execIn(engine, id, ['sh', '-c', 'ls -a /ctx /ctx/sub; cat /greeting']);
  const out = ls.stdout.toString();
  assert.match(out, /keep\.txt/);
  assert.match(out, /nested\.txt/);
  assert.match(out, /hi \$there/);
  assert.doesNotMatch(out, /secret\.txt/);
  assert.doesNotMatch(out, /debug\.log/);
});

test('a failing build rejects with the builder message; a missing image is a readable error', async (t) => {
  if (!(await needEngine(t))) return;
  await mkdir(join(dir, 'bad'), { recursive: true });
  await writeFile(join(dir, 'bad', 'Dockerfile'), `FROM ${BASE_IMAGE}\nRUN exit 3\n`);
  await assert.rejects(
    buildImage(engine, { contextDir: join(dir, 'bad'), tag: 'svc/t-bad:x' }),
    (e: unknown) => e instanceof StackError && /build failed: .*returned a non-zero code: 3/.test(e.message),
  );
  const app = appName('b');
  apps.add(app);
  const plan = await planStack(parseCompose('services:\n  web:\n    build: .\n').model!, {
    app,
    workdir: dir,
  });
  assert.ok(plan.ok);
  await assert.rejects(
    stackUp(engine, plan.plan, { deploymentId: 'never-built' }),
    /image "svc\/.*:never-built" for service "web" is not present/,
  );
});
