// Instance controls against the real engine: info, disk usage, a prune that spares every app's
// objects (scoped to this test's label: the engine is shared), and reset (step-up, exact confirm)
// leaving nothing of the removed apps while operators, tokens and audit stay.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startTestServer,
  adminClient,
  apiToken,
  ADMIN,
  Client,
  type TestServer,
} from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { removeTagged } from './_helpers.js';
import { poll } from '../_support/wait.js';
import { pruneEngine } from '#lib/instance/disk.js';
import { liveSet } from '#lib/instance/store.js';
import { LABEL_APP, LABEL_ROLE, LABEL_SERVICE } from '#lib/docker/names.js';
import { ownerLabels } from '#lib/docker/owner.js';

let s: TestServer | undefined;
let c: Client;
const tag = `w14-inst-${process.pid}`;

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
});
after(async () => {
  if (!s) return;
  await removeTagged(s.env.engine, tag);
  await s.stop();
});

// The engine runs one disk-usage walk at a time and answers 500 to any other: the control plane
// shares one walk between its own callers and waits out a walk another client started.
test('disk usage asked several times at once, and while another client walks the disk, answers each time', async (t) => {
  if (!(await needEngine(t))) return;
  const other = s!.env.engine.docker.df().catch(() => null);
  const answers = await Promise.all([
    c.req('GET', '/api/instance/disk'),
    c.req('GET', '/api/instance/disk'),
    c.req('GET', '/api/databases'),
    c.req('GET', '/api/instance/disk'),
  ]);
  await other;
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200],
    answers.map((a) => a.text).join('\n'),
  );
});

test('info and disk describe the instance and the engine', async (t) => {
  if (!(await needEngine(t))) return;
  const i = await c.req('GET', '/api/instance/info');
  assert.equal(i.status, 200, i.text);
  assert.equal(i.body.engine.reachable, true);
  assert.match(i.body.engine.version, /\d+\.\d+/);
  assert.equal(i.body.database.dialect, 'sqlite');
  assert.ok(i.body.database.size_bytes > 0);
  assert.equal(i.body.node_version, process.version);
  assert.deepEqual(i.body.features, { shell: false, security_agent: false, traffic_monitor: true });
  assert.equal(i.body.proxy.reachable, false);
  assert.ok(Date.parse(i.body.started_at) <= Date.now());
  const d = await c.req('GET', '/api/instance/disk');
  assert.equal(d.status, 200, d.text);
  for (const k of ['images', 'containers', 'volumes', 'build_cache'])
    assert.equal(typeof d.body[k].size_bytes, 'number', k);
  assert.ok(d.body.images.count > 0);
});

// The HTTP prune (step-up, unscoped) is played on a private engine: prune-private.e2e.test.ts.
test("prune removes only this instance's leftovers: never a live app's, never one it did not make", async (t) => {
  if (!(await needEngine(t))) return;
  const d = s!.env.engine.docker;
  const scope = `svc.test=${tag}`;
  const live = `${tag}-live`;
  const created = await c.req('POST', '/api/apps', {
    name: live,
    source: { type: 'image', image: BASE_IMAGE },
  });
  assert.equal(created.status, 201, created.text);
  const make = async (labels: Record<string, string>) => {
    const ct = await d.createContainer({
      Image: BASE_IMAGE,
      Cmd: ['true'],
      Labels: { 'svc.test': tag, ...labels },
    });
    await ct.start();
    await ct.wait();
    return ct;
  };
  const mine = ownerLabels(s!.env.engine);
  const stray = await make({});
  const lookalike = await make({ [LABEL_APP]: live, [LABEL_SERVICE]: 'web', 'svc.managed': 'true' });
  const probe = await make({ ...mine, [LABEL_ROLE]: 'probe' });
  const stoppedApp = await make({ ...mine, [LABEL_APP]: live, [LABEL_SERVICE]: 'web' });
  // Untagged (dangling) images: one of nobody, one of a live app (a kept rollback image), one of ours with no app.
  const strayImage = (await stray.commit({ changes: [`LABEL svc.test=${tag}`, 'LABEL w14=stray'] })) as {
    Id: string;
  };
  const appImage = (await stray.commit({
    changes: [
      `LABEL svc.test=${tag}`,
      ...Object.entries({ ...mine, [LABEL_APP]: live }).map(([k, v]) => `LABEL ${k}=${v}`),
    ],
  })) as { Id: string };
  const ourImage = (await stray.commit({
    changes: [
      `LABEL svc.test=${tag}`,
      'LABEL w14=ours',
      ...Object.entries(mine).map(([k, v]) => `LABEL ${k}=${v}`),
    ],
  })) as { Id: string };
  const r = await pruneEngine(s!.env.engine, await liveSet(s!.env.db), { scope });
  assert.equal(r.containers_deleted, 1);
  assert.equal(r.images_deleted, 1);
  await assert.rejects(d.getContainer(probe.id).inspect(), /no such container/i);
  await assert.rejects(d.getImage(ourImage.Id).inspect(), /no such image/i);
  for (const kept of [stray, lookalike, stoppedApp]) await kept.inspect();
  await d.getImage(strayImage.Id).inspect();
  await d.getImage(appImage.Id).inspect();
});

test('reset: wrong confirm or no step-up removes nothing; then every app goes and operators stay', async (t) => {
  if (!(await needEngine(t))) return;
  const token = await apiToken(c, 'survives-reset');
  const fresh = new Client(s!.url);
  fresh.cookies = new Map(c.cookies);
  const name = `${tag}-app2`;
  const d = s!.env.engine.docker;
  // The app's source image (the base has no command); not the app's own, so reset leaves it.
  const base = await d.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], Labels: { 'svc.test': tag } });
  await base.commit({
    repo: `svc-test-w14/${tag}`,
    tag: 'run',
    changes: ['CMD ["sleep", "3600"]', `LABEL svc.test=${tag}`],
  });
  await base.remove({ force: true, v: true });
  const created = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'image', image: `svc-test-w14/${tag}:run` },
  });
  assert.equal(created.status, 201, created.text);
  const appId = created.body.app.id;
  // What a real app owns: containers and a network (started by svc), a volume and a built image.
  const start = await c.req('POST', `/api/apps/${appId}/start`);
  assert.ok(start.status < 300, start.text);
  await d.createVolume({
    Name: `svc-${name}-data`,
    Labels: { ...ownerLabels(s!.env.engine), [LABEL_APP]: name, 'svc.test': tag },
  });
  const builder = await d.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], Labels: { 'svc.test': tag } });
  const img = (await builder.commit({
    repo: `svc/${name}-web`,
    tag: 'dep1',
    changes: [
      `LABEL ${LABEL_APP}=${name}`,
      `LABEL svc.test=${tag}`,
      ...Object.entries(ownerLabels(s!.env.engine)).map(([k, v]) => `LABEL ${k}=${v}`),
    ],
  })) as { Id: string };
  await builder.remove({ force: true, v: true });
  const owned = async () => ({
    containers: (await d.listContainers({ all: true, filters: { label: [`${LABEL_APP}=${name}`] } })).length,
    networks: (await d.listNetworks({ filters: { label: [`${LABEL_APP}=${name}`] } })).length,
    volumes: ((await d.listVolumes({ filters: { label: [`${LABEL_APP}=${name}`] } })).Volumes ?? []).length,
    images: (await d.listImages({ filters: { label: [`${LABEL_APP}=${name}`] } })).length,
  });
  const before = await owned();
  assert.ok(
    before.containers >= 1 && before.networks >= 1 && before.volumes === 1 && before.images === 1,
    JSON.stringify(before),
  );

  // A session without a recent step-up (a fresh login) and a wrong confirm: refused, nothing removed.
  const plain = new Client(s!.url);
  await plain.req('POST', '/api/auth/login', ADMIN);
  const noStep = await plain.req('POST', '/api/instance/reset', { confirm: 'RESET' });
  assert.equal(noStep.status, 403);
  assert.equal(noStep.body.code, 'step_up_required');
  await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  for (const bad of [{ confirm: 'reset' }, {}, { confirm: 'RESET', extra: 1 }]) {
    const r = await c.req('POST', '/api/instance/reset', bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
  }
  assert.deepEqual(await owned(), before);
  assert.equal((await c.req('GET', `/api/apps/${appId}`)).status, 200);

  const r = await c.req('POST', '/api/instance/reset', { confirm: 'RESET' });
  assert.equal(r.status, 200, r.text);
  assert.ok(
    r.body.removed.some((a: any) => a.name === name),
    r.text,
  );
  assert.deepEqual(r.body.failed, []);
  await poll(
    'nothing of the app left',
    async () => {
      const o = await owned();
      return o.containers + o.networks + o.volumes + o.images === 0 ? o : null;
    },
    60_000,
    250,
  );
  await assert.rejects(d.getImage(img.Id).inspect(), /no such image/i);
  assert.deepEqual((await c.req('GET', '/api/apps')).body.items, []);
  // Operators, tokens, audit stay.
  const byToken = new Client(s!.url);
  byToken.bearer = token;
  assert.equal((await byToken.req('GET', '/api/auth/me')).status, 200);
  assert.equal((await new Client(s!.url).req('POST', '/api/auth/login', ADMIN)).status, 200);
  const audit = await c.req('GET', '/api/audit');
  assert.ok(JSON.stringify(audit.body).includes('instance.reset'), 'the reset is audited');
});
