// Upgrade adoption: the engine objects an older build made carry no svc.instance label. The first
// boot that creates the instance id on a database with apps records their ids; one made later
// with the same labels (by anyone) is never adopted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, adminClient, Client, type TestServer } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { removeTagged } from './_helpers.js';
import { adoptLegacyObjects, ADOPTED_SETTING } from '#lib/instance/owner.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_MANAGED, LABEL_SERVICE } from '#lib/docker/names.js';

let s: TestServer | undefined;
let c: Client;
const tag = `w14-own-${process.pid}`;

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
});
after(async () => {
  if (!s) return;
  await removeTagged(s.env.engine, tag);
  await s.stop();
});

test("an older build's containers are adopted by id once; a look-alike made after is not", async (t) => {
  if (!(await needEngine(t))) return;
  const r = await c.req('POST', '/api/apps', { name: tag, source: { type: 'image', image: BASE_IMAGE } });
  assert.equal(r.status, 201, r.text);
  const d = s!.env.engine.docker;
  const legacyLabels = (service: string) => ({
    [LABEL_MANAGED]: 'true',
    [LABEL_APP]: tag,
    [LABEL_SERVICE]: service,
    [LABEL_DEPLOYMENT]: 'old',
    'svc.test': tag,
  });
  const old = await d.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: legacyLabels('web'),
  });
  await old.start();
  const names = async () =>
    ((await c.req('GET', `/api/apps/${r.body.app.id}/services`)).body.items as { name: string }[])
      .map((x) => x.name)
      .sort();
  assert.deepEqual(await names(), [], 'not ours before the adoption pass');
  // The database as an older build left it: no adoption list yet.
  await s!.env.db.deleteFrom('settings').where('key', '=', ADOPTED_SETTING).execute();
  assert.ok((await adoptLegacyObjects(s!.env.db, s!.env.engine)) >= 1);
  assert.deepEqual(await names(), ['web']);
  const late = await d.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: legacyLabels('worker'),
  });
  await late.start();
  // A second pass (the engine answering again) does not take a new inventory.
  await adoptLegacyObjects(s!.env.db, s!.env.engine);
  assert.deepEqual(await names(), ['web']);
});
