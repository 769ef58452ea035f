// Repeated delivery ids within the window are duplicates; the table stays bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeliveryDedupe, isRepeat } from '../../lib/webhooks/index.js';

const H = 60 * 60 * 1000;

test('a repeat within the window is seen; after it, or for another app, it is new', () => {
  const d = createDeliveryDedupe({ windowMs: 24 * H });
  const t0 = 1_700_000_000_000;
  assert.equal(d.seen('app1', 'id-1', t0), false);
  assert.equal(d.seen('app1', 'id-1', t0 + H), true);
  assert.equal(d.seen('app2', 'id-1', t0 + H), false, 'ids are per app');
  assert.equal(d.seen('app1', 'id-1', t0 + 23 * H), true, 'repeats do not extend the window but are still inside it');
  assert.equal(d.seen('app1', 'id-1', t0 + 24 * H), false, 'window over');
  assert.equal(d.seen('app1', 'id-1', t0 + 25 * H), true);
});

test('bounded: the oldest ids are dropped first, expired ones are pruned', () => {
  const d = createDeliveryDedupe({ windowMs: H, maxIds: 3 });
  const t0 = 1_000;
  for (let i = 0; i < 5; i++) assert.equal(d.seen('a', `id-${i}`, t0 + i), false);
  assert.equal(d.size, 3);
  assert.equal(d.seen('a', 'id-4', t0 + 10), true);
  assert.equal(d.seen('a', 'id-0', t0 + 10), false, 'evicted, so new again');
  d.seen('a', 'late', t0 + 2 * H);
  assert.equal(d.size, 1, 'everything older than the window is gone');
});

test('forget lets a retry through', () => {
  const d = createDeliveryDedupe();
  assert.equal(d.seen('a', 'x', 5), false);
  d.forget('a', 'x');
  assert.equal(d.seen('a', 'x', 6), false);
});

test('isRepeat (the rule for a table-backed store)', () => {
  assert.equal(isRepeat(null, 10, 100), false);
  assert.equal(isRepeat(undefined, 10, 100), false);
  assert.equal(isRepeat(0, 99, 100), true);
  assert.equal(isRepeat(0, 100, 100), false);
});
