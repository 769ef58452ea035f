// Unit tests of lib/auth's throttles and caches: the rate limiter, the credential cache, and the
// login guard with its signed device cookies.
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { HttpError } from '#lib/http/errors.js';
import { RateLimiter } from '#lib/auth/ratelimit.js';
import { credentialCache, invalidateCredentials, onCredentialsChanged } from '#lib/auth/cache.js';
import { LoginGuard, issueDevice, readDevice, DEVICE_COOKIE, DEVICE_MAX_AGE } from '#lib/auth/guard.js';
import { T0 } from './_setup.js';

test('rate limiter: a bucket of `limit` per window refilled smoothly; the key table is bounded (oldest out)', () => {
  const rl = new RateLimiter(3, 60_000, 2);
  assert.equal(rl.blocked('a', T0), null, 'an unknown key is not blocked');
  for (let i = 0; i < 3; i++) assert.deepEqual(rl.hit('a', T0), { ok: true });
  assert.deepEqual(rl.hit('a', T0), { ok: false, retryAfter: 20 });
  assert.equal(rl.blocked('a', T0), 20);
  assert.equal(rl.blocked('a', T0 + 10_000), 10);
  assert.equal(rl.blocked('a', T0 + 19_500), 1);
  assert.equal(rl.blocked('a', T0 + 19_999), 1, 'never less than a second');
  assert.equal(rl.blocked('a', T0 + 20_000), null);
  assert.deepEqual(rl.hit('a', T0 + 20_000), { ok: true });
  assert.deepEqual(rl.hit('a', T0 + 20_000), { ok: false, retryAfter: 20 });
  // Refill caps at the limit however long the key rests.
  for (let i = 0; i < 3; i++) assert.deepEqual(rl.hit('a', T0 + 10_000_000), { ok: true });
  assert.equal(rl.hit('a', T0 + 10_000_000).ok, false);
  // Keys are independent; a third key evicts the least recently used one.
  assert.deepEqual(rl.hit('b', T0), { ok: true });
  assert.equal(rl.blocked('a', T0 + 10_000_000), 20);
  rl.hit('c', T0 + 10_000_000);
  assert.equal(rl.blocked('b', T0 + 10_000_000), null, 'b was evicted: a fresh bucket');
  assert.equal(rl.blocked('a', T0 + 10_000_000), 20, 'a was used more recently than b and stays');
  rl.hit('b', T0 + 10_000_000);
  assert.equal(rl.blocked('c', T0 + 10_000_000), null, 'c had two tokens left');
});

test('credential cache: entries live 5 s, the table is bounded, and every change clears every cache and tells listeners', () => {
  const a = credentialCache<number>();
  const b = credentialCache<number>();
  assert.equal(a.get('k', T0), undefined);
  a.set('k', 1, T0);
  b.set('k', 2, T0);
  assert.equal(a.get('k', T0 + 4_999), 1);
  assert.equal(a.get('k', T0 + 5_000), undefined, 'expired at the TTL');
  assert.equal(a.get('k', T0), undefined, 'and removed once expired');
  a.set('k', 1, T0);
  a.delete('k');
  assert.equal(a.get('k', T0), undefined);
  for (let i = 0; i < 1025; i++) a.set(`k${i}`, i, T0);
  assert.equal(a.get('k0', T0), undefined, 'the oldest entry made room');
  assert.equal(a.get('k1', T0), 1);
  assert.equal(a.get('k1024', T0), 1024);
  let calls = 0;
  const off = onCredentialsChanged(() => {
    calls++;
  });
  const offThrowing = onCredentialsChanged(() => {
    throw new Error('listener failed');
  });
  let after = 0;
  const offAfter = onCredentialsChanged(() => {
    after++;
  });
  invalidateCredentials();
  assert.equal(a.get('k1', T0), undefined);
  assert.equal(b.get('k', T0), undefined);
  assert.deepEqual([calls, after], [1, 1], 'a failing listener does not stop the others');
  off();
  offThrowing();
  offAfter();
  invalidateCredentials();
  assert.deepEqual([calls, after], [1, 1], 'unsubscribed');
});

test('login guard: device cookies are signed per user; a stranger is locked out of an account, a known device is not', () => {
  const key = new Uint8Array(32).fill(3);
  const other = new Uint8Array(32).fill(4);
  const v = issueDevice(key, 'u1');
  const [uid, id, sig] = v.split('.');
  assert.equal(uid, 'u1');
  assert.equal(Buffer.from(id!, 'base64url').length, 16);
  assert.equal(sig, createHmac('sha256', key).update(`device:u1.${id}`).digest('base64url'));
  assert.deepEqual(readDevice(key, v), { userId: 'u1', id });
  assert.notEqual(issueDevice(key, 'u1'), v);
  assert.equal(readDevice(other, v), null, 'another key');
  assert.equal(readDevice(key, `u2.${id}.${sig}`), null, 'another user');
  assert.equal(readDevice(key, `u1.${id}x.${sig}`), null, 'another id');
  assert.equal(readDevice(key, `${v}.x`), null);
  assert.equal(readDevice(key, `u1.${id}`), null);
  assert.equal(readDevice(key, undefined), null);
  assert.equal(readDevice(key, ''), null);
  const long = issueDevice(key, 'u'.repeat(190));
  assert.ok(long.length > 256);
  assert.equal(readDevice(key, long), null, 'over 256 characters');
  const fits = issueDevice(key, 'u'.repeat(256 - 1 - 22 - 1 - 43));
  assert.equal(fits.length, 256);
  assert.notEqual(readDevice(key, fits), null, 'exactly 256 characters is read');
  assert.equal(DEVICE_COOKIE, 'svc_device');
  assert.equal(DEVICE_MAX_AGE, 180 * 86400);

  const g = new LoginGuard(3);
  const dev = { userId: 'u1', id: 'd1' };
  g.admit('Alice', false, T0);
  assert.equal(g.failed('Alice', null, T0), false);
  assert.equal(g.failed('alice', null, T0), false);
  assert.equal(g.failed('ALICE', dev, T0), true, 'the third failure (any case) locks the account');
  assert.equal(g.failed('ALICE', null, T0), false, 'already locked: not "just locked"');
  assert.throws(
    () => g.admit('alice', false, T0),
    (e: unknown) =>
      e instanceof HttpError &&
      e.status === 429 &&
      e.code === 'rate_limited' &&
      e.headers?.['retry-after'] === '300',
  );
  assert.throws(() => g.admit('Al\u0069ce', false, T0 + 299_000), HttpError);
  g.admit('alice', true, T0);
  g.admit('bob', false, T0);
  // Unlocks as the window refills (15 min for 3: one every 5 min).
  g.admit('alice', false, T0 + 300_000);
  // NFC: the decomposed spelling is the same account.
  const n = new LoginGuard(1);
  n.failed('jos\u00e9', null, T0);
  assert.throws(() => n.admit('jose\u0301', false, T0), HttpError);
  // A device fails 5 times, then is no longer in good standing.
  const d = new LoginGuard(100);
  for (let i = 0; i < 4; i++) d.failed('x', dev, T0);
  assert.equal(d.deviceInGoodStanding(dev, T0), true);
  d.failed('x', dev, T0);
  assert.equal(d.deviceInGoodStanding(dev, T0), false);
  assert.equal(d.deviceInGoodStanding({ userId: 'u1', id: 'd2' }, T0), true);
  assert.equal(d.deviceInGoodStanding(dev, T0 + 180_000), true, 'one failure forgiven every 3 min');
});
