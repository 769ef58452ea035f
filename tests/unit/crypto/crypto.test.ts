import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSealer, SealError } from '#lib/crypto/seal.js';
import { HttpError } from '#lib/http/errors.js';
import { newId, ID_PATTERN, safeEqual } from '#lib/crypto/random.js';

const key = Buffer.alloc(32, 7);

test('sealed values open only with the same key and the same owning row', () => {
  const s = createSealer(key);
  const env = s.seal('p@ss "w$rd" #1\nline2 ünï', 'app:1:env:DB_PASS');
  assert.match(env, /^v1\.[\w-]{16}\.[\w-]*\.[\w-]{22}$/);
  assert.equal(s.open(env, 'app:1:env:DB_PASS'), 'p@ss "w$rd" #1\nline2 ünï');
  assert.throws(() => s.open(env, 'app:2:env:DB_PASS'), SealError);
  assert.throws(() => createSealer(Buffer.alloc(32, 8)).open(env, 'app:1:env:DB_PASS'), SealError);
});

test('the same plaintext seals differently each time', () => {
  const s = createSealer(key);
  assert.notEqual(s.seal('x', 'b'), s.seal('x', 'b'));
});

test('a truncated or altered tag, a flipped byte or an unknown version fails to open', () => {
  const s = createSealer(key);
  const env = s.seal('secret', 'row');
  const [v, iv, ct, tag] = env.split('.');
  const tagBytes = Buffer.from(tag!, 'base64url');
  for (const n of [4, 8, 12, 15]) {
    assert.throws(
      () => s.open([v, iv, ct, tagBytes.subarray(0, n).toString('base64url')].join('.'), 'row'),
      SealError,
      `tag of ${n} bytes`,
    );
  }
  const flipped = Buffer.from(ct!, 'base64url');
  flipped[0] = flipped[0]! ^ 1;
  assert.throws(() => s.open([v, iv, flipped.toString('base64url'), tag].join('.'), 'row'), SealError);
  assert.throws(() => s.open(['v9', iv, ct, tag].join('.'), 'row'), SealError);
  assert.throws(() => s.open('garbage', 'row'), SealError);
});

test('without a master key, sealing is a 503 service_unavailable', () => {
  const s = createSealer(null);
  assert.equal(s.available, false);
  assert.throws(
    () => s.seal('x', 'y'),
    (e: unknown) => e instanceof HttpError && e.status === 503 && e.code === 'service_unavailable',
  );
});

test('ids are opaque, time-ordered and unique', () => {
  const a = newId(1000);
  const b = newId(2000);
  assert.match(a, ID_PATTERN);
  assert.ok(a < b);
  const many = new Set(Array.from({ length: 1000 }, () => newId()));
  assert.equal(many.size, 1000);
});

test('safeEqual compares content, including different lengths', () => {
  assert.equal(safeEqual('abc', 'abc'), true);
  assert.equal(safeEqual('abc', 'abd'), false);
  assert.equal(safeEqual('abc', 'abcd'), false);
});
