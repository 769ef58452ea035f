// Real images from a real private registry (Debian's docker-registry with bcrypt htpasswd on
// loopback): two versions of a small busybox web image are pushed, then removed from the engine,
// so every deployment below has to pull. Without credentials the deploy fails readably; a wrong
// password fails without the password anywhere; stored credentials pull and serve; a moved tag
// and `pull: true` serve the new bytes; a rollback runs the old digest; a compose app pulls from
// the registry; a deploy hook called by an unauthenticated client pulls and redeploys.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, ADMIN, startTestServer, type Client, type TestServer } from '../_support/server.js';
import { needDocker, ensureBaseImage, BASE_IMAGE } from '../_support/docker.js';
import { startRegistry, buildWebImage, type TestRegistry } from '../_support/registry.js';
import { callInApp, cleanupApp, waitStatus } from './_deploy.js';
import { removeTagged } from './_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';

const LABEL = `images-${process.pid}`;
const V1 = `svc-test/images-web:v1-${process.pid}`;
const V2 = `svc-test/images-web:v2-${process.pid}`;
let s: TestServer;
let c: Client;
let reg: TestRegistry;
let digests: { v1: string; v2: string };
let ready: Promise<void> | null = null;
const made: string[] = [];

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_000;
  s.env.deployments.opts.keepImages = 3;
});
after(async () => {
  for (const name of made) await cleanupApp(s.env.engine, name);
  await reg?.stop();
  await removeTagged(s.env.engine, LABEL);
  await s.stop();
});

/** The registry with `team/web:stable` = v1 and `team/web:2` = v2, none of them on the engine. */
async function registryReady(t: Parameters<typeof needDocker>[0]): Promise<boolean> {
  if (!(await needDocker(t))) return false;
  ready ??= (async () => {
    await ensureBaseImage();
    reg = await startRegistry();
    await buildWebImage(V1, 'version one', LABEL, BASE_IMAGE);
    await buildWebImage(V2, 'version two', LABEL, BASE_IMAGE);
    digests = {
      v1: await reg.push(V1, 'team/web:stable'),
      v2: await reg.push(V2, 'team/web:2'),
    };
    for (const ref of [`${reg.host}/team/web:stable`, `${reg.host}/team/web:2`, V1, V2])
      await reg.forget(ref);
  })();
  await ready;
  return true;
}

async function stepUp(): Promise<void> {
  const r = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(r.status, 200, r.text);
}

async function createApp(source: Record<string, unknown>): Promise<{ id: string; name: string }> {
  const name = `img-${Math.random().toString(36).slice(2, 8)}`;
  made.push(name);
  const r = await c.req('POST', '/api/apps', { name, source });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

async function deploy(appId: string, body: Record<string, unknown> = {}): Promise<any> {
  const r = await c.req('POST', `/api/apps/${appId}/deployments`, body);
  assert.equal(r.status, 202, r.text);
  return waitStatus(c, appId, r.body.deployment.id, ['succeeded', 'failed']);
}

async function logLines(appId: string, depId: string): Promise<Array<{ stream: string; line: string }>> {
  return (await c.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`)).body.items;
}

let storedId: string | null = null;

/** Stores (or changes) the registry's credentials; a step-up first, as an operator must. */
async function storeCredentials(password: string): Promise<void> {
  await stepUp();
  const r = storedId
    ? await c.req('PATCH', `/api/registries/${storedId}`, { password })
    : await c.req('POST', '/api/registries', { host: reg.host, username: reg.username, password });
  assert.equal(r.status, storedId ? 200 : 201, r.text);
  assert.equal(JSON.stringify(r.body).includes(password), false);
  storedId = r.body.registry.id;
}

test('a private image: refused without credentials and with a wrong password (no password anywhere), then pulled and served', async (t) => {
  if (!(await registryReady(t))) return;
  const app = await createApp({ type: 'image', image: `${reg.host}/team/web:stable` });

  const anonymous = await deploy(app.id);
  assert.equal(anonymous.status, 'failed');
  assert.match(
    anonymous.error,
    new RegExp(`registry ${reg.host.replace('.', '\\.')}: authentication failed`),
  );
  assert.match(anonymous.error, /no credentials are stored/);

  const wrong = `wrong-${reg.password}-x`;
  await storeCredentials(wrong);
  const refused = await deploy(app.id);
  assert.equal(refused.status, 'failed');
  assert.match(refused.error, /authentication failed/);
  assert.match(refused.error, new RegExp(`user ${reg.username}`));
  // The password is in no answer, no log line, no audit entry, no server log.
  const everything = JSON.stringify([
    refused,
    await logLines(app.id, refused.id),
    (await c.req('GET', '/api/registries')).body,
    (await c.req('GET', '/api/audit?limit=100')).body,
    (await c.req('POST', `/api/registries/${storedId}/test`)).body,
  ]);
  for (const secret of [wrong, reg.password]) assert.equal(everything.includes(secret), false);
  assert.equal((await c.req('POST', `/api/registries/${storedId}/test`)).body.ok, false);

  await storeCredentials(reg.password);
  const tested = await c.req('POST', `/api/registries/${storedId}/test`);
  assert.deepEqual(tested.body, { ok: true });
  const ok = await deploy(app.id);
  assert.equal(ok.status, 'succeeded', ok.error);
  assert.deepEqual(ok.image_digests, { app: digests.v1 });
  assert.equal(await callInApp(s.env.engine, app.name, `http://app:8080/`), 'version one\n');
  const pulls = (await logLines(app.id, ok.id)).filter((l) => l.stream === 'pull').map((l) => l.line);
  assert.ok(
    pulls.some((l) => l.includes(`with the stored credentials of ${reg.host}`)),
    pulls.join('\n'),
  );
  assert.ok(
    pulls.some((l) => /^layer [0-9a-f]{12}: Pull complete$/.test(l)),
    pulls.join('\n'),
  );
  // At most one line per layer and state: no byte counts.
  assert.equal(new Set(pulls).size, pulls.length, pulls.join('\n'));
  const registries = (await c.req('GET', '/api/registries')).body.items;
  assert.ok(registries.find((r: any) => r.id === storedId).last_used_at);
  assert.equal(reg.log().includes(reg.password), false);
});

test('the tag moves: pull: true serves the new bytes, and a rollback runs the old digest exactly', async (t) => {
  if (!(await registryReady(t))) return;
  if (!storedId) await storeCredentials(reg.password);
  const app = await createApp({ type: 'image', image: `${reg.host}/team/web:stable` });
  const first = await deploy(app.id);
  assert.equal(first.status, 'succeeded', first.error);
  assert.deepEqual(first.image_digests, { app: digests.v1 });

  // CI pushes version two under the same tag.
  const moved = await reg.copy('team/web:2', 'team/web:stable');

  // Without pull: true the engine keeps what it has.
  const same = await deploy(app.id);
  assert.equal(same.status, 'succeeded', same.error);
  assert.deepEqual(same.image_digests, { app: digests.v1 });
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version one\n');

  const fresh = await deploy(app.id, { pull: true });
  assert.equal(fresh.status, 'succeeded', fresh.error);
  assert.equal(fresh.pull, true);
  assert.deepEqual(fresh.image_digests, { app: moved });
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version two\n');

  const rb = await c.req('POST', `/api/apps/${app.id}/deployments/${first.id}/rollback`);
  assert.equal(rb.status, 202, rb.text);
  const back = await waitStatus(c, app.id, rb.body.deployment.id, ['succeeded', 'failed']);
  assert.equal(back.status, 'succeeded', back.error);
  assert.deepEqual(back.image_digests, { app: digests.v1 });
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version one\n');
  const running = await listAppContainers(s.env.engine, app.name);
  assert.ok(
    running.some((ct) => ct.image === `${reg.host}/team/web@${digests.v1}`),
    JSON.stringify(running.map((r) => r.image)),
  );
  // The tag itself still names version two: the rollback did not re-resolve it.
  const tagged = await s.env.engine.docker.getImage(`${reg.host}/team/web:stable`).inspect();
  assert.ok(tagged.RepoDigests.includes(`${reg.host}/team/web@${moved}`));
  // Keep tags hold the images of the newest SVC_KEEP_IMAGES (3 here) deployments, no more.
  const kept = async (d: { id: string }) =>
    s.env.engine.docker
      .getImage(`svc/${app.name}-app:${d.id}`)
      .inspect()
      .then(
        () => true,
        () => false,
      );
  assert.deepEqual(await Promise.all([first, same, fresh, back].map(kept)), [false, true, true, true]);
});

test('a compose app pulls its services from the private registry', async (t) => {
  if (!(await registryReady(t))) return;
  if (!storedId) await storeCredentials(reg.password);
  const compose = `services:\n  web:\n    image: ${reg.host}/team/web:2\n`;
  const app = await createApp({ type: 'compose', compose, pull: 'always' });
  const d = await deploy(app.id);
  assert.equal(d.status, 'succeeded', d.error);
  assert.deepEqual(d.image_digests, { web: digests.v2 });
  assert.equal(await callInApp(s.env.engine, app.name, 'http://web:8080/'), 'version two\n');
  const pulls = (await logLines(app.id, d.id)).filter((l) => l.stream === 'pull');
  assert.ok(pulls.some((l) => l.line.startsWith(`pulling ${reg.host}/team/web:2`)));
});

test('a deploy hook: made once with a step-up, called by an unauthenticated client, pulls and redeploys', async (t) => {
  if (!(await registryReady(t))) return;
  if (!storedId) await storeCredentials(reg.password);
  const app = await createApp({ type: 'image', image: `${reg.host}/team/web:2` });
  await stepUp();
  const made1 = await c.req('POST', `/api/apps/${app.id}/deploy-hook`);
  assert.equal(made1.status, 200, made1.text);
  const url: string = made1.body.url;
  assert.match(url, /\/hooks\/deploy\/[A-Za-z0-9_-]{43}$/);
  const path = url.slice(url.indexOf('/hooks/'));
  const called = await fetch(`${s.url}${path}`, { method: 'POST' });
  assert.equal(called.status, 202);
  const { deployment_id } = (await called.json()) as { deployment_id: string };
  const d = await waitStatus(c, app.id, deployment_id, ['succeeded', 'failed']);
  assert.equal(d.status, 'succeeded', d.error);
  assert.equal(d.trigger, 'hook');
  assert.equal(d.pull, true);
  assert.deepEqual(d.image_digests, { app: digests.v2 });
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version two\n');
  const entry = (await c.req('GET', `/api/audit?limit=50`)).body.items.find(
    (e: any) => e.event === 'app.deploy_hook',
  );
  assert.equal(entry.action, 'POST /hooks/deploy/{token}');
  assert.equal(entry.actor.type, 'system');
  assert.match(entry.actor.name, /^deploy-hook:[0-9a-z]{26}$/);
  assert.equal(JSON.stringify(entry).includes(path.split('/').pop()!), false);
  const unknown = await fetch(`${s.url}/hooks/deploy/${'x'.repeat(43)}`, { method: 'POST' });
  assert.equal(unknown.status, 404);
  // Deleting the app releases the tags that held its pulled images for rollbacks.
  const keep = `svc/${app.name}-app:${deployment_id}`;
  assert.ok(
    await s.env.engine.docker
      .getImage(keep)
      .inspect()
      .then(
        () => true,
        () => false,
      ),
  );
  await stepUp();
  assert.equal((await c.req('DELETE', `/api/apps/${app.id}`)).status, 200);
  assert.equal(
    await s.env.engine.docker
      .getImage(keep)
      .inspect()
      .then(
        () => true,
        () => false,
      ),
    false,
  );
});
