// Every add-on template passes the same compose policy as any app, with its parameters as env;
// images are pinned (a tag that is not "latest") and listed; the API serves the catalog.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { parseCompose } from '#lib/compose/index.js';
import { getAddon, listAddons, resolveParams } from '#lib/addons/catalog.js';
import { adminClient, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';

test('at least eight add-ons; each template passes the compose policy with pinned images', () => {
  const all = listAddons();
  assert.ok(all.length >= 8);
  for (const a of all) {
    const full = getAddon(a.id);
    const { env, generated } = resolveParams(full);
    for (const p of full.params.filter((x) => x.generated))
      assert.match(generated[p.key]!, /^[A-Za-z0-9_-]{32}$/);
    const r = parseCompose(full.compose, { env });
    assert.equal(r.ok, true, `${a.id}: ${JSON.stringify(r.findings)}`);
    assert.deepEqual(
      r.findings.filter((f) => f.level === 'error'),
      [],
    );
    const images = Object.values(r.model!.services)
      .map((s: any) => s.image)
      .sort();
    assert.deepEqual(images, [...a.images].sort(), a.id);
    for (const img of images)
      (assert.match(img, /:[^:/]+$/, `${a.id}: ${img} has no tag`), assert.doesNotMatch(img, /:latest$/));
    assert.deepEqual(Object.keys(r.model!.services).sort(), [...a.services].sort(), a.id);
    assert.ok(a.footprint_mb > 0);
  }
});

test('a template that broke the policy would be caught: the check is not vacuous', () => {
  const bad = getAddon('uptime-kuma').compose.replace('restart: unless-stopped', 'privileged: true');
  assert.equal(parseCompose(bad, {}).ok, false);
});

test('unknown parameters are refused; given values win over defaults and generation', () => {
  const a = getAddon('minio');
  assert.throws(() => resolveParams(a, { NOPE: 'x' }), /Unknown parameter/);
  const { env, generated } = resolveParams(a, { MINIO_ROOT_PASSWORD: 'given-password' });
  assert.equal(env.MINIO_ROOT_PASSWORD, 'given-password');
  assert.equal(env.MINIO_ROOT_USER, 'admin');
  assert.deepEqual(generated, {});
});

let s: TestApp;
let c: Client;
before(async () => {
  s = await startTestApp();
  c = await adminClient(s);
});
after(() => s.stop());

test('GET /api/addons lists the catalog without templates; GET /api/addons/{id} answers one or 404', async () => {
  const l = await c.req('GET', '/api/addons');
  assert.equal(l.status, 200);
  assert.ok(l.body.items.length >= 8);
  for (const a of l.body.items)
    for (const k of ['id', 'name', 'description', 'category', 'services', 'images', 'footprint_mb', 'params'])
      assert.ok(k in a, k);
  const one = await c.req('GET', '/api/addons/umami');
  assert.equal(one.status, 200);
  assert.match(one.body.addon.compose, /services:/);
  assert.equal((await c.req('GET', '/api/addons/nope')).status, 404);
  assert.equal((await c.req('GET', '/api/addons/..%2Fx')).status, 400);
});
