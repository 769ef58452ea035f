// The dedupe tables production uses (lib/webhooks/store.ts over SQLite): delivery ids kept for a
// window and bounded per app, ref updates kept until the per-app bound drops the oldest.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { memoryEnv } from '../../_support/env.js';
import type { Services } from '#lib/http/handler.js';
import { insertApp } from '#lib/apps/store.js';
import {
  deliverySeen,
  forgetDelivery,
  recordPush,
  forgetPush,
  DELIVERY_RETENTION_MS,
  MAX_DELIVERIES_PER_APP,
  MAX_PUSHES_PER_APP,
} from '#lib/webhooks/store.js';
import { SHA_A, SHA_B } from './_payloads.js';

let env: Services;
let a: string;
let b: string;
const T0 = Date.parse('2030-01-01T00:00:00Z');
const H = 3600_000;

before(async () => {
  env = await memoryEnv();
  a = (
    await insertApp(
      env.db,
      'dedupe-a',
      { type: 'git', repo_url: 'https://git.example/a.git', branch: 'main' },
      T0,
    )
  ).id;
  b = (
    await insertApp(
      env.db,
      'dedupe-b',
      { type: 'git', repo_url: 'https://git.example/b.git', branch: 'main' },
      T0,
    )
  ).id;
});
after(() => env.db.destroy());

const rows = async (table: 'webhook_deliveries' | 'webhook_pushes', appId: string) =>
  (await env.db.selectFrom(table).select('app_id').where('app_id', '=', appId).execute()).length;

test('a delivery id repeats within the window, per app; rows older than the window are deleted', async () => {
  assert.equal(await deliverySeen(env.db, a, 'id-1', T0), false);
  assert.equal(await deliverySeen(env.db, a, 'id-1', T0 + H), true);
  assert.equal(await deliverySeen(env.db, b, 'id-1', T0 + H), false, 'ids are per app');
  assert.equal(
    await deliverySeen(env.db, a, 'id-1', T0 + DELIVERY_RETENTION_MS - 1),
    true,
    'a repeat keeps the first time',
  );
  // Any later delivery prunes what is past the window, for every app.
  assert.equal(await deliverySeen(env.db, a, 'id-2', T0 + DELIVERY_RETENTION_MS + 2 * H), false);
  const left = await env.db.selectFrom('webhook_deliveries').select(['app_id', 'delivery_id']).execute();
  assert.deepEqual(left, [{ app_id: a, delivery_id: 'id-2' }]);
  assert.equal(
    await deliverySeen(env.db, a, 'id-1', T0 + DELIVERY_RETENTION_MS + 2 * H),
    false,
    'expired, so new again',
  );
});

test('a flood of fresh delivery ids is bounded per app, oldest dropped first; other apps keep theirs', async () => {
  const t = T0 + 10 * DELIVERY_RETENTION_MS;
  assert.equal(await deliverySeen(env.db, b, 'keep-b', t), false);
  for (let i = 0; i < MAX_DELIVERIES_PER_APP + 25; i++)
    assert.equal(await deliverySeen(env.db, a, `flood-${i}`, t + i), false);
  assert.equal(await rows('webhook_deliveries', a), MAX_DELIVERIES_PER_APP);
  assert.equal(
    await deliverySeen(env.db, a, `flood-${MAX_DELIVERIES_PER_APP + 24}`, t + MAX_DELIVERIES_PER_APP + 30),
    true,
    'the newest is kept',
  );
  assert.equal(
    await deliverySeen(env.db, a, 'flood-0', t + MAX_DELIVERIES_PER_APP + 31),
    false,
    'the oldest was dropped',
  );
  assert.equal(
    await deliverySeen(env.db, b, 'keep-b', t + MAX_DELIVERIES_PER_APP + 32),
    true,
    "another app's ids are untouched",
  );
});

test('forgetDelivery lets the same id through again', async () => {
  const t = T0 + 20 * DELIVERY_RETENTION_MS;
  assert.equal(await deliverySeen(env.db, b, 'retry-me', t), false);
  await forgetDelivery(env.db, b, 'retry-me');
  assert.equal(await deliverySeen(env.db, b, 'retry-me', t + 1), false);
});

test('a ref update is recorded once, without a time limit; a different previous commit is another update', async () => {
  const key = { ref: 'refs/tags/v1', old: '', new: SHA_A };
  assert.equal(await recordPush(env.db, b, key, T0), true);
  assert.equal(
    await recordPush(env.db, b, key, T0 + 365 * 24 * H),
    false,
    'a year later it is still a repeat',
  );
  assert.equal(await recordPush(env.db, a, key, T0), true, 'per app');
  assert.equal(
    await recordPush(env.db, b, { ...key, old: SHA_B }, T0),
    true,
    'a force-push back to the same commit is a new update',
  );
  assert.equal(
    await recordPush(env.db, b, { ...key, ref: 'refs/heads/v1' }, T0),
    true,
    'a branch is not the tag of the same name',
  );
  await forgetPush(env.db, b, key);
  assert.equal(await recordPush(env.db, b, key, T0 + 1), true, 'forgotten, so new again');
});

test('recorded ref updates are bounded per app, oldest dropped first', async () => {
  const before = await rows('webhook_pushes', b);
  const sha = (i: number) => i.toString(16).padStart(40, '0');
  for (let i = 1; i <= MAX_PUSHES_PER_APP + 10; i++)
    assert.equal(await recordPush(env.db, a, { ref: 'refs/heads/main', old: '', new: sha(i) }, T0 + i), true);
  assert.equal(await rows('webhook_pushes', a), MAX_PUSHES_PER_APP);
  assert.equal(
    await recordPush(
      env.db,
      a,
      { ref: 'refs/heads/main', old: '', new: sha(MAX_PUSHES_PER_APP + 10) },
      T0 + 2e6,
    ),
    false,
    'the newest is kept',
  );
  assert.equal(
    await recordPush(env.db, a, { ref: 'refs/heads/main', old: '', new: sha(1) }, T0 + 2e6),
    true,
    'the oldest was dropped',
  );
  assert.equal(await rows('webhook_pushes', b), before, "another app's rows are untouched");
});
