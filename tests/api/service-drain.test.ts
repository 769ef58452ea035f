// A service's drain period (`drain_s`) over the API, in-process with the typed client: its default,
// its bounds, and that it is part of the service's audited settings (so a revert restores it).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, typedClient, type TestApp } from '../_support/request.js';
import type { SvcClient } from '../../client/index.js';
import { serviceSettings } from '#lib/apps/store.js';

let s: TestApp;
let api: SvcClient;
let appId = '';

before(async () => {
  s = await startTestApp();
  api = await typedClient(s);
  const made = await api.POST('/api/apps', {
    body: { name: 'drain-api', source: { type: 'image', image: 'nginx:1.27' } },
  });
  assert.equal(made.response.status, 201);
  appId = made.data!.app.id;
});
after(async () => {
  await s?.stop();
});

const patch = (body: Record<string, unknown>) =>
  api.PATCH('/api/apps/{id}/services/{name}', {
    params: { path: { id: appId, name: 'app' } },
    body: body as never,
  });

test('drain_s defaults to 30, takes 0..3600 seconds, and null goes back to the default', async () => {
  const port = await patch({ port: 8080 });
  assert.equal(port.response.status, 200);
  assert.equal(port.data!.drain_s, 30, 'the default, shown');
  const set = await patch({ drain_s: 5 });
  assert.equal(set.response.status, 200);
  assert.deepEqual([set.data!.port, set.data!.drain_s], [8080, 5], 'the other settings are kept');
  assert.equal((await serviceSettings(s.env.db, appId)).get('app')!.drain_s, 5);
  const zero = await patch({ drain_s: 0 });
  assert.equal(zero.data!.drain_s, 0, '0: retired at once');
  const back = await patch({ drain_s: null });
  assert.equal(back.data!.drain_s, 30);
});

test('a drain_s that is not a whole number of seconds in 0..3600 is a 400 that changes nothing', async () => {
  await patch({ drain_s: 12 });
  for (const bad of [-1, 3601, 1.5, '5', true]) {
    const r = await patch({ drain_s: bad });
    assert.equal(r.response.status, 400, JSON.stringify(bad));
    assert.equal(r.error!.code, 'bad_request');
  }
  assert.equal((await serviceSettings(s.env.db, appId)).get('app')!.drain_s, 12);
});

test('the audit records drain_s with the service settings, and reverting the change restores it', async () => {
  await patch({ drain_s: 40 });
  await patch({ drain_s: 90 });
  const audit = await api.GET('/api/audit', { params: { query: { action: 'app.service_updated' } } });
  assert.equal(audit.response.status, 200);
  const last = audit.data!.items[0]!;
  assert.equal((last.detail as { drain_s?: number }).drain_s, 90);
  const r = await api.POST('/api/audit/{id}/revert', { params: { path: { id: last.id } }, body: {} });
  assert.equal(r.response.status, 200, JSON.stringify(r.error));
  assert.equal((await serviceSettings(s.env.db, appId)).get('app')!.drain_s, 40);
});
