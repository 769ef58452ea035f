// The cluster registry's account goes to Swarm only with services whose image is in that registry
// (lib/cluster/rollout.ts): an image from elsewhere is pulled without it, since the engine would
// present it to that other registry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authFor } from '#lib/cluster/rollout.js';

test('the account goes with the cluster registry images only', () => {
  const auth = { username: 'svc', password: 'p', serveraddress: '10.0.0.11:5000' };
  assert.equal(authFor(`10.0.0.11:5000/library/app@sha256:${'a'.repeat(64)}`, auth), auth);
  for (const other of [
    'nginx:1.27',
    'registry.example/team/app:1',
    '10.0.0.11:5000evil/x:1',
    '10.0.0.11/x:1',
  ])
    assert.deepEqual(authFor(other, auth), {}, other);
  assert.deepEqual(authFor('10.0.0.11:5000/x:1', {}), {}, 'an operator registry: nothing');
  assert.deepEqual(authFor('10.0.0.11:5000/x:1', undefined), {});
});
