// A deploy trigger patched over the API with the typed client: paused in place (same id),
// validated, audited with a diff, and revertible. Creating, listing and removing triggers is in
// webhooks.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient } from '../../_support/server.js';
import { startTestApp, typedSession, type TestApp } from '../../_support/request.js';
import type { SvcClient } from '../../../client/index.js';
import { githubPush } from '../../unit/webhooks/_payloads.js';
import { gitApp, entries, lastEntry, github, deliver } from './_apps.js';

let s: TestApp;
let api: SvcClient;

before(async () => {
  s = await startTestApp();
  api = typedSession(s, await adminClient(s));
});
after(async () => {
  await s?.stop();
});

test('PATCH a trigger: paused in place (same id), validated, audited with a diff, and reverted', async () => {
  const app = await gitApp(api);
  const id = app.id;
  const triggers = async () =>
    (await api.GET('/api/apps/{id}/triggers', { params: { path: { id } } })).data!.items;
  const t = (
    await api.POST('/api/apps/{id}/triggers', {
      params: { path: { id } },
      body: { event: 'push', pattern: 'release/*' },
    })
  ).data!;
  const patch = (tid: string, body: unknown) =>
    api.PATCH('/api/apps/{id}/triggers/{tid}', { params: { path: { id, tid } }, body: body as never });
  const paused = await patch(t.id, { enabled: false });
  assert.equal(paused.response.status, 200, JSON.stringify(paused.error));
  assert.deepEqual(paused.data, { id: t.id, event: 'push', pattern: 'release/*', enabled: false });
  assert.deepEqual(await triggers(), [paused.data]);

  // A paused rule does not match: with no enabled rule, only the app's own branch deploys.
  const r = await deliver(s, id, github(app.secret, 'push', githubPush('refs/heads/release/1')));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.match(r.body.ignored, /not the app's branch "main"/);

  for (const bad of [
    {},
    { pattern: 'a\u0001b' },
    { event: 'branch' },
    { enabled: 'no' },
    { pattern: 'x', extra: 1 },
  ]) {
    const b = await patch(t.id, bad);
    assert.equal(b.response.status, 400, JSON.stringify(bad));
    assert.equal(b.error!.code, 'bad_request');
  }
  assert.equal((await patch('01m7xsp88xare7pbe7126vxpxd', { enabled: true })).response.status, 404);
  assert.deepEqual(await triggers(), [paused.data], 'refused patches changed nothing');

  const moved = await patch(t.id, { pattern: 'hotfix/**', event: 'push' });
  assert.equal(moved.response.status, 200, JSON.stringify(moved.error));
  const entry = await lastEntry(api, 'app.trigger_updated', id);
  assert.equal(entry.action, 'PATCH /api/apps/{id}/triggers/{tid}');
  assert.equal(entry.revertible, true);
  const diff = await api.GET('/api/audit/{id}/diff', { params: { path: { id: entry.id } } });
  assert.equal(diff.response.status, 200, JSON.stringify(diff.error));
  assert.deepEqual(
    diff.data!.rows.find((row) => row.field === t.id),
    {
      field: t.id,
      status: 'changed',
      before: { event: 'push', pattern: 'release/*', enabled: false },
      after: { event: 'push', pattern: 'hotfix/**', enabled: false },
      masked: false,
    },
  );
  const rev = await api.POST('/api/audit/{id}/revert', { params: { path: { id: entry.id } }, body: {} });
  assert.equal(rev.response.status, 200, JSON.stringify(rev.error));
  // Reverting the pause too brings the rule back as it was first, under the same id.
  const pause = (await entries(api, 'app.trigger_updated', id)).at(-1)!;
  const back = await api.POST('/api/audit/{id}/revert', {
    params: { path: { id: pause.id } },
    body: { force: true },
  });
  assert.equal(back.response.status, 200);
  assert.deepEqual(await triggers(), [t]);
});
