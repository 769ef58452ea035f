// Creating a notification channel over the API with the typed client: the answer is wrapped like
// every other creation, and shows a hint of the address, never its secret part.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient } from '../../_support/server.js';
import { startTestApp, typedSession, type TestApp } from '../../_support/request.js';
import type { SvcClient } from '../../../client/index.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';

let s: TestApp;
let api: SvcClient;

before(async () => {
  s = await startTestApp();
  api = typedSession(s, await adminClient(s));
});
after(async () => {
  await s?.stop();
});

test('POST /api/settings/notifications answers 201 {"channel": ...}, wrapped like every other creation', async () => {
  const resolve = async (): Promise<ResolvedAddress[]> => [{ address: '8.8.8.8', family: 4 }];
  Object.assign(s.env.notifier.transport, { resolve });
  const r = await api.POST('/api/settings/notifications', {
    body: { kind: 'slack', name: 'ops', url: 'https://hooks.example.net/services/T/B/secret-abcd' },
  });
  assert.equal(r.response.status, 201, JSON.stringify(r.error));
  assert.deepEqual(Object.keys(r.data!), ['channel']);
  assert.equal(r.data!.channel.name, 'ops');
  assert.equal(r.data!.channel.url_hint, 'hooks.example.net/…abcd');
  assert.ok(!JSON.stringify(r.data).includes('secret-abcd'));
  const one = await api.GET('/api/settings/notifications/{id}', {
    params: { path: { id: r.data!.channel.id } },
  });
  assert.equal(one.data!.id, r.data!.channel.id);
});
