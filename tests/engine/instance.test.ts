// Instance controls against the real engine: info, disk usage, a prune that spares every app's
// objects (scoped to this test's label: the engine is shared), and reset (step-up, exact confirm)
// leaving nothing of the removed apps while operators, tokens and audit stay.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, adminClient, apiToken, ADMIN, Client, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { poll } from '../_support/wait.js';
import { pruneEngine } from '../../lib/instance/disk.js';
import { LABEL_APP } from '../../lib/docker/names.js';

let s: TestServer | undefined;
let c: Client;
const tag = `w14-inst-${process.pid}`;

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
});
after(async () => {
  if (!s) return;
  const d = s.env.engine.docker;
  for (const ct of await d.listContainers({ all: true, filters: { label: [`svc.test=${tag}`] } }))
    await d
      .getContainer(ct.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  for (const im of await d.listImages({ filters: { label: [`svc.test=${tag}`] } }))
    await d
      .getImage(im.Id)
      .remove({ force: true })
      .catch(() => {});
  for (const v of (await d.listVolumes({ filters: { label: [`svc.test=${tag}`] } })).Volumes ?? [])
    await d
      .getVolume(v.Name)
      .remove()
      .catch(() => {});
  await s.stop();
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
  for (const k of ['images', 'containers', 'volumes', 'build_cache']) assert.equal(typeof d.body[k].size_bytes, 'number', k);
  assert.ok(d.body.images.count > 0);
});

test("prune removes stopped unowned containers and dangling images, never an app's", async (t) => {
  if (!(await needEngine(t))) return;
  const d = s!.env.engine.docker;
  const scope = `svc.test=${tag}`;
  const make = async (labels: Record<string, string>) => {
    const ct = await d.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], Labels: { 'svc.test': tag, ...labels } });
    await ct.start();
    await ct.wait();
    return ct;
  };
  const stray = await make({});
  const owned = await make({ [LABEL_APP]: `${tag}-app` });
  // Untagged (dangling) images: one of nobody, one labelled with an app (a kept rollback image).
  const strayImage = (await stray.commit({ changes: [`LABEL svc.test=${tag}`, 'LABEL w14=stray'] })) as { Id: string };
  const ownedImage = (await owned.commit({ changes: [`LABEL svc.test=${tag}`, `LABEL ${LABEL_APP}=${tag}-app`] })) as { Id: string };
  const r = await pruneEngine(s!.env.engine, { scope });
  assert.ok(r.containers_deleted >= 1);
  assert.ok(r.images_deleted >= 1);
  await assert.rejects(d.getContainer(stray.id).inspect(), /no such container/i);
  await d.getContainer(owned.id).inspect();
  await assert.rejects(d.getImage(strayImage.Id).inspect(), /no such image/i);
  await d.getImage(ownedImage.Id).inspect();
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
  await base.commit({ repo: `svc-test-w14/${tag}`, tag: 'run', changes: ['CMD ["sleep", "3600"]', `LABEL svc.test=${tag}`] });
  await base.remove({ force: true, v: true });
  const created = await c.req('POST', '/api/apps', { name, source: { type: 'image', image: `svc-test-w14/${tag}:run` } });
  assert.equal(created.status, 201, created.text);
  const appId = created.body.app.id;
  // What a real app owns: containers and a network (started by svc), a volume and a built image.
  const start = await c.req('POST', `/api/apps/${appId}/start`);
  assert.ok(start.status < 300, start.text);
  await d.createVolume({ Name: `svc-${name}-data`, Labels: { [LABEL_APP]: name, 'svc.test': tag } });
  const builder = await d.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], Labels: { 'svc.test': tag } });
  const img = (await builder.commit({ repo: `svc/${name}-web`, tag: 'dep1', changes: [`LABEL ${LABEL_APP}=${name}`, `LABEL svc.test=${tag}`] })) as { Id: string };
  await builder.remove({ force: true, v: true });
  const owned = async () => ({
    containers: (await d.listContainers({ all: true, filters: { label: [`${LABEL_APP}=${name}`] } })).length,
    networks: (await d.listNetworks({ filters: { label: [`${LABEL_APP}=${name}`] } })).length,
    volumes: ((await d.listVolumes({ filters: { label: [`${LABEL_APP}=${name}`] } })).Volumes ?? []).length,
    images: (await d.listImages({ filters: { label: [`${LABEL_APP}=${name}`] } })).length,
  });
  const before = await owned();
  assert.ok(before.containers >= 1 && before.networks >= 1 && before.volumes === 1 && before.images === 1, JSON.stringify(before));

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
