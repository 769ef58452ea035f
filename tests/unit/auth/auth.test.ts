// Unit tests of lib/auth against an in-memory database: password hashing and its gate, the
// rate limiter, the credential cache, login throttling and device cookies, sessions, API tokens,
// the request principal, step-up, operators, first-boot setup, the signing key and pre-auth
// tokens, the login cookies, and TOTP enrolment with recovery codes. The HTTP behaviour is in
// auth.e2e.test.ts; this file is fast on purpose: `npm run mutation` runs it once per mutant.
import { accessOf } from '#lib/auth/access.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryEnv } from '../../_support/env.js';
import { HttpError } from '#lib/http/errors.js';
import { createSealer } from '#lib/crypto/seal.js';
import { sha256Hex } from '#lib/crypto/random.js';
import { HashGate, hashPassword, verifyPassword, dummyHash } from '#lib/auth/passwords.js';
import { RateLimiter } from '#lib/auth/ratelimit.js';
import { credentialCache, invalidateCredentials, onCredentialsChanged } from '#lib/auth/cache.js';
import { LoginGuard, issueDevice, readDevice, DEVICE_COOKIE, DEVICE_MAX_AGE } from '#lib/auth/guard.js';
import { resolveSession, csrfFor, type ResolvedSession } from '#lib/auth/sessions.js';
import { createSession, deleteSessionByRaw, listSessions, revokeSession } from '#lib/auth/sessions-store.js';
import {
  createApiToken,
  resolveApiToken,
  listApiTokens,
  TOKEN_PATTERN,
  type ResolvedToken,
} from '#lib/auth/tokens.js';
import { revokeApiToken } from '#lib/auth/tokens-store.js';
import { authenticate, BEARER, SESSION_COOKIE, CSRF_COOKIE, PRE_COOKIE } from '#lib/auth/principal.js';
import { hasRecentStepUp, markStepUp, STEP_UP_SECONDS } from '#lib/auth/stepup.js';
import { publicUser, USERNAME_PATTERN, PASSWORD_MAX, PASSWORD_MIN } from '#lib/auth/users.js';
import {
  insertUser,
  findUser,
  findUserByName,
  countUsers,
  deleteUser,
  setPassword,
} from '#lib/auth/users-store.js';
import {
  prepareSetup,
  readSetupToken,
  checkSetupToken,
  closeSetup,
  setupTokenPath,
} from '#lib/auth/setup.js';
import {
  loadSigningKey,
  signPreAuth,
  verifyPreAuth,
  isSealed,
  SIGNING_KEY_SETTING,
  SIGNING_KEY_BINDING,
  PRE_AUTH_SECONDS,
} from '#lib/auth/signing.js';
import { startSession, endSessionCookies } from '#lib/auth/login.js';
import {
  totpCode,
  totpBinding,
  otpauthUrl,
  enableTotp,
  consumeSecondFactor,
  disableTotp,
  rehashRecoveryCodes,
  newTotpSecret,
  checkTotp,
  ISSUER,
} from '#lib/auth/totp.js';
import type { Principal } from '#lib/http/handler.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const LIMITS = { idleSeconds: 3600, maxSeconds: 86400 };
const iso = (ms: number) => new Date(ms).toISOString();
const headers = (h: Record<string, string>) => ({ get: (n: string) => h[n.toLowerCase()] ?? null });

async function setup() {
  const env = await memoryEnv();
  const user = await insertUser(env.db, 'alice', 'scrypt$10$8$1$x$y');
  return { env, db: env.db, user };
}

function deferred() {
  let resolve!: () => void;
  const p = new Promise<void>((r) => (resolve = r));
  return { p, resolve };
}

test('passwords: scrypt hashes carry their parameters and verify only the same password (NFC)', async () => {
  const h = await hashPassword('correct horse battery', 10);
  const parts = h.split('$');
  assert.equal(parts.length, 6);
  assert.deepEqual(parts.slice(0, 4), ['scrypt', '10', '8', '1']);
  assert.equal(Buffer.from(parts[4]!, 'base64url').length, 16);
  assert.equal(Buffer.from(parts[5]!, 'base64url').length, 32);
  assert.equal(await verifyPassword('correct horse battery', h), true);
  assert.equal(await verifyPassword('correct horse batterz', h), false);
  assert.equal(await verifyPassword('', h), false);
  assert.notEqual(await hashPassword('correct horse battery', 10), h, 'salted');
  // NFC: a composed and a decomposed é are the same password.
  const nfc = await hashPassword('caf\u00e9-passphrase', 10, 'priority');
  assert.equal(await verifyPassword('cafe\u0301-passphrase', nfc, 'priority'), true);
  // Parameters out of range or a foreign format are refused without hashing.
  const [, , , , salt, key] = parts;
  for (const bad of [
    `bcrypt$10$8$1$${salt}$${key}`,
    `scrypt$10$8$1$${salt}`,
    `scrypt$10$8$1$${salt}$${key}$x`,
    `scrypt$9$8$1$${salt}$${key}`,
    `scrypt$21$8$1$${salt}$${key}`,
    `scrypt$10$0$1$${salt}$${key}`,
    `scrypt$10$33$1$${salt}$${key}`,
    `scrypt$10$8$0$${salt}$${key}`,
    `scrypt$10$8$17$${salt}$${key}`,
    `scrypt$x$8$1$${salt}$${key}`,
    '',
  ])
    assert.equal(await verifyPassword('correct horse battery', bad), false, bad);
  // Other parameters in range still verify (raising the cost later keeps old hashes valid).
  assert.equal(
    await verifyPassword(
      'pw',
      `scrypt$20$8$1$${salt}$${key}`
        .replace(/\$20\$/, '$10$')
        .replace(key!, await rawScrypt('pw', salt!, 10, 8, 1)),
    ),
    true,
  );
  assert.equal(
    await verifyPassword('pw', `scrypt$11$2$2$${salt}$${await rawScrypt('pw', salt!, 11, 2, 2)}`),
    true,
  );
  assert.equal(
    await verifyPassword('pw', `scrypt$10$32$1$${salt}$${await rawScrypt('pw', salt!, 10, 32, 1)}`),
    true,
  );
  assert.equal(
    await verifyPassword('pw', `scrypt$10$1$16$${salt}$${await rawScrypt('pw', salt!, 10, 1, 16)}`),
    true,
  );
  // A truncated key never matches.
  assert.equal(
    await verifyPassword(
      'pw',
      `scrypt$10$8$1$${salt}$${(await rawScrypt('pw', salt!, 10, 8, 1)).slice(0, 20)}`,
    ),
    false,
  );
  const d = dummyHash(10).split('$');
  assert.deepEqual(d.slice(0, 4), ['scrypt', '10', '8', '1']);
  assert.equal(Buffer.from(d[4]!, 'base64url').length, 16);
  assert.equal(Buffer.from(d[5]!, 'base64url').length, 32);
  assert.notEqual(dummyHash(10), dummyHash(10));
  assert.equal(await verifyPassword('pw', dummyHash(10)), false);
});

async function rawScrypt(pw: string, salt: string, logN: number, r: number, p: number): Promise<string> {
  const { scrypt } = await import('node:crypto');
  return new Promise((res, rej) =>
    scrypt(
      pw.normalize('NFC'),
      Buffer.from(salt, 'base64url'),
      32,
      { N: 2 ** logN, r, p, maxmem: 256 * 2 ** logN * r + 1024 * 1024 },
      (e, k) => (e ? rej(e) : res(k.toString('base64url'))),
    ),
  );
}

test('hash gate: slots, a slot reserved for the priority lane, bounded queues answering 429 with Retry-After', async () => {
  const gate = new HashGate({ slots: 2, reserved: 1, maxWaiting: { normal: 1, priority: 1 } });
  const order: string[] = [];
  const job = (name: string, d: { p: Promise<void> }) => async () => {
    order.push(`start ${name}`);
    await d.p;
    order.push(`end ${name}`);
    return name;
  };
  const n1 = deferred();
  const r1 = gate.run('normal', job('n1', n1));
  assert.deepEqual(gate.stats(), { active: 1, waiting: { normal: 0, priority: 0 } });
  // A second stranger cannot take the reserved slot: it waits.
  const n2 = deferred();
  const r2 = gate.run('normal', job('n2', n2));
  assert.deepEqual(gate.stats(), { active: 1, waiting: { normal: 1, priority: 0 } });
  // A third is refused at once with a Retry-After of at least a second.
  await assert.rejects(
    gate.run('normal', async () => 'n3'),
    (e: unknown) =>
      e instanceof HttpError &&
      e.status === 429 &&
      e.code === 'rate_limited' &&
      Number(e.headers?.['retry-after']) >= 1,
  );
  // The operator's lane takes the reserved slot at once.
  const p1 = deferred();
  const rp = gate.run('priority', job('p1', p1));
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 1, priority: 0 } });
  const p2 = deferred();
  const rp2 = gate.run('priority', job('p2', p2));
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 1, priority: 1 } });
  await assert.rejects(
    gate.run('priority', async () => 'p3'),
    (e: unknown) => e instanceof HttpError && e.status === 429,
  );
  // When n1 ends, the waiting priority job goes first (into any slot).
  n1.resolve();
  assert.equal(await r1, 'n1');
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 1, priority: 0 } });
  assert.ok(order.includes('start p2'));
  assert.ok(!order.includes('start n2'));
  p1.resolve();
  assert.equal(await rp, 'p1');
  // Now only p2 (priority) runs: the stranger may take the unreserved slot.
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 0, priority: 0 } });
  assert.ok(order.includes('start n2'));
  n2.resolve();
  p2.resolve();
  assert.deepEqual([await r2, await rp2], ['n2', 'p2']);
  assert.deepEqual(gate.stats(), { active: 0, waiting: { normal: 0, priority: 0 } });
  // A failing job frees its slot too.
  await assert.rejects(
    gate.run('normal', async () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.deepEqual(gate.stats(), { active: 0, waiting: { normal: 0, priority: 0 } });
  // With nothing waiting and a slot free, a job starts at once; a stranger never queues behind an idle gate.
  const solo = new HashGate({ slots: 1, reserved: 0, maxWaiting: { normal: 0, priority: 0 } });
  assert.equal(await solo.run('normal', async () => 1), 1);
  assert.equal(await solo.run('priority', async () => 2), 2);
  const hold = deferred();
  const held = solo.run('priority', () => hold.p);
  await assert.rejects(
    solo.run('priority', async () => 3),
    (e: unknown) => e instanceof HttpError && e.status === 429,
  );
  hold.resolve();
  await held;
  // Retry-After grows with the queue and shrinks with parallelism (typical hash 250 ms at first).
  const big = new HashGate({ slots: 1, reserved: 0, maxWaiting: { normal: 8, priority: 8 } });
  const b = deferred();
  const waiting: Promise<unknown>[] = [big.run('normal', () => b.p)];
  for (let i = 0; i < 8; i++) waiting.push(big.run('normal', () => Promise.resolve()));
  await assert.rejects(
    big.run('normal', async () => 0),
    (e: unknown) => e instanceof HttpError && e.headers?.['retry-after'] === '3',
  );
  b.resolve();
  await Promise.all(waiting);
});

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

test('sessions: only the hash is stored; idle and absolute expiry delete them; last seen is written at most once a minute', async () => {
  const { db, user } = await setup();
  invalidateCredentials();
  const s = await createSession(db, user.id, { ip: '10.0.0.1', userAgent: 'x'.repeat(300) }, LIMITS, T0);
  assert.equal(s.raw.length, 43);
  const row = await db.selectFrom('sessions').selectAll().where('id', '=', s.id).executeTakeFirstOrThrow();
  assert.deepEqual(
    { ...row },
    {
      id: s.id,
      token_hash: sha256Hex(s.raw),
      user_id: user.id,
      created_at: iso(T0),
      last_seen_at: iso(T0),
      expires_at: iso(T0 + 86_400_000),
      ip: '10.0.0.1',
      user_agent: 'x'.repeat(256),
      step_up_until: null,
    },
  );
  const s2 = await createSession(db, user.id, { ip: null, userAgent: null }, LIMITS, T0 + 1);
  assert.equal(
    (await db.selectFrom('sessions').select('user_agent').where('id', '=', s2.id).executeTakeFirstOrThrow())
      .user_agent,
    null,
  );
  assert.deepEqual(resolveSession(db, s.raw, LIMITS, T0), {
    id: s.id,
    stepUpUntil: null,
    user: { id: user.id, username: 'alice', totp_enabled: false, role: 'owner', app_ids: null, sso: false },
    access: accessOf('owner', null),
  });
  assert.equal(resolveSession(db, s.raw.slice(1), LIMITS, T0), null, 'wrong length');
  assert.equal(resolveSession(db, s.raw + 'a', LIMITS, T0), null);
  assert.equal(resolveSession(db, 'a'.repeat(43), LIMITS, T0), null, 'unknown');
  const seen = async (id: string) =>
    (await db.selectFrom('sessions').select('last_seen_at').where('id', '=', id).executeTakeFirstOrThrow())
      .last_seen_at;
  invalidateCredentials();
  resolveSession(db, s.raw, LIMITS, T0 + 60_000);
  assert.equal(await seen(s.id), iso(T0), 'not touched within the minute');
  invalidateCredentials();
  resolveSession(db, s.raw, LIMITS, T0 + 60_001);
  assert.equal(await seen(s.id), iso(T0 + 60_001));
  // From the cache too: the touch is kept in the cached row, not repeated.
  resolveSession(db, s.raw, LIMITS, T0 + 62_000);
  assert.equal(await seen(s.id), iso(T0 + 60_001));
  // Idle: last seen + idle is the end.
  invalidateCredentials();
  assert.notEqual(resolveSession(db, s.raw, LIMITS, T0 + 60_001 + 3_599_999), null);
  assert.equal(await seen(s.id), iso(T0 + 60_001 + 3_599_999));
  invalidateCredentials();
  assert.equal(resolveSession(db, s.raw, LIMITS, T0 + 60_001 + 3_599_999 + 3_600_000), null);
  assert.equal(
    await db.selectFrom('sessions').select('id').where('id', '=', s.id).executeTakeFirst(),
    undefined,
    'deleted',
  );
  // Absolute: expires_at ends it even while active, and the cached entry goes with it.
  const s3 = await createSession(
    db,
    user.id,
    { ip: null, userAgent: null },
    { idleSeconds: 10_000_000, maxSeconds: 100 },
    T0,
  );
  assert.notEqual(resolveSession(db, s3.raw, LIMITS, T0 + 99_999), null);
  assert.equal(resolveSession(db, s3.raw, LIMITS, T0 + 100_000), null);
  assert.equal(resolveSession(db, s3.raw, LIMITS, T0 + 1), null, 'gone from the cache and the table');
  // A step-up shows in the resolved session.
  await db
    .updateTable('sessions')
    .set({ step_up_until: iso(T0 + 5000) })
    .where('id', '=', s2.id)
    .execute();
  invalidateCredentials();
  assert.equal((resolveSession(db, s2.raw, LIMITS, T0 + 2) as ResolvedSession)!.stepUpUntil, iso(T0 + 5000));
  assert.equal(
    csrfFor(new Uint8Array(32).fill(1), 'abc'),
    createHmac('sha256', new Uint8Array(32).fill(1)).update('csrf:abc').digest('base64url'),
  );
  assert.notEqual(csrfFor(new Uint8Array(32).fill(1), 'abc'), csrfFor(new Uint8Array(32).fill(2), 'abc'));
  await db.destroy();
});

test('sessions: list (current marked, expired left out, newest first), revoke own only, delete by raw clears the cache', async () => {
  const { db, user } = await setup();
  const other = await insertUser(db, 'bob', 'x');
  const a = await createSession(db, user.id, { ip: 'a', userAgent: 'A' }, LIMITS, T0);
  const b = await createSession(db, user.id, { ip: 'b', userAgent: 'B' }, LIMITS, T0 + 1000);
  const old = await createSession(
    db,
    user.id,
    { ip: 'c', userAgent: 'C' },
    { idleSeconds: 60, maxSeconds: 300 },
    T0 - 1000,
  );
  const theirs = await createSession(db, other.id, { ip: 'o', userAgent: 'O' }, LIMITS, T0);
  const list = await listSessions(db, user.id, a.id, T0 + 299_000 + 2000);
  assert.deepEqual(
    list.map((s) => [s.id, s.current, s.ip, s.user_agent]),
    [
      [b.id, false, 'b', 'B'],
      [a.id, true, 'a', 'A'],
    ],
  );
  assert.deepEqual(Object.keys(list[0]!).sort(), [
    'created_at',
    'current',
    'expires_at',
    'id',
    'ip',
    'last_seen_at',
    'user_agent',
  ]);
  assert.equal((await listSessions(db, user.id, null, T0 + 298_000)).length, 3, 'not yet expired');
  assert.equal(await revokeSession(db, user.id, theirs.id), false, "another operator's session");
  assert.notEqual(resolveSession(db, theirs.raw, LIMITS, T0), null);
  assert.notEqual(resolveSession(db, b.raw, LIMITS, T0 + 1000), null);
  assert.equal(await revokeSession(db, user.id, b.id), true);
  assert.equal(resolveSession(db, b.raw, LIMITS, T0 + 1000), null, 'the cached entry went too');
  assert.equal(await revokeSession(db, user.id, b.id), false);
  assert.notEqual(resolveSession(db, a.raw, LIMITS, T0), null);
  await deleteSessionByRaw(db, a.raw);
  assert.equal(resolveSession(db, a.raw, LIMITS, T0), null);
  assert.equal(
    await db.selectFrom('sessions').select('id').where('id', '=', a.id).executeTakeFirst(),
    undefined,
  );
  assert.ok(old.id);
  await db.destroy();
});

test('API tokens: svc_ + 43 characters, stored hashed; revoked, expired or unknown resolve to nothing; last used at most once a minute', async () => {
  const { db, user } = await setup();
  invalidateCredentials();
  const t = await createApiToken(db, user.id, 'ci', iso(T0 + 100_000), T0);
  assert.match(t.token, TOKEN_PATTERN);
  assert.match(t.token, /^svc_[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(
    { ...t, token: undefined, id: undefined },
    {
      id: undefined,
      token: undefined,
      name: 'ci',
      created_at: iso(T0),
      expires_at: iso(T0 + 100_000),
      scopes: null,
      app_ids: null,
    },
  );
  const row = await db.selectFrom('api_tokens').selectAll().where('id', '=', t.id).executeTakeFirstOrThrow();
  assert.deepEqual(
    { ...row },
    {
      id: t.id,
      user_id: user.id,
      name: 'ci',
      token_hash: sha256Hex(t.token),
      created_at: iso(T0),
      expires_at: iso(T0 + 100_000),
      last_used_at: null,
      revoked_at: null,
      step_up_until: null,
      scopes: null,
      app_ids: null,
    },
  );
  assert.deepEqual(resolveApiToken(db, t.token, T0), {
    id: t.id,
    stepUpUntil: null,
    user: { id: user.id, username: 'alice', totp_enabled: false, role: 'owner', app_ids: null, sso: false },
    access: accessOf('owner', null, { scopes: null, app_ids: null }),
  });
  const used = async () =>
    (
      await db
        .selectFrom('api_tokens')
        .select('last_used_at')
        .where('id', '=', t.id)
        .executeTakeFirstOrThrow()
    ).last_used_at;
  assert.equal(await used(), iso(T0), 'first use is recorded');
  invalidateCredentials();
  resolveApiToken(db, t.token, T0 + 60_000);
  assert.equal(await used(), iso(T0));
  invalidateCredentials();
  resolveApiToken(db, t.token, T0 + 60_001);
  assert.equal(await used(), iso(T0 + 60_001));
  assert.equal((resolveApiToken(db, t.token, T0 + 99_999) as ResolvedToken)!.id, t.id);
  assert.equal(resolveApiToken(db, t.token, T0 + 100_000), null, 'expired');
  assert.equal(resolveApiToken(db, 'svc_' + 'a'.repeat(43), T0), null, 'unknown');
  assert.equal(resolveApiToken(db, t.token.slice(0, -1), T0), null, 'malformed');
  assert.equal(resolveApiToken(db, t.token + 'a', T0), null);
  assert.equal(resolveApiToken(db, 'x' + t.token.slice(1), T0), null);
  const forever = await createApiToken(db, user.id, 'forever', null, T0 + 5);
  assert.notEqual(resolveApiToken(db, forever.token, T0 + 10 ** 12), null, 'no expiry');
  const other = await insertUser(db, 'bob', 'x');
  const theirs = await createApiToken(db, other.id, 'theirs', null, T0);
  assert.deepEqual(
    (await listApiTokens(db, user.id)).map((x) => x.name),
    ['forever', 'ci'],
    'own tokens, newest first',
  );
  assert.deepEqual(Object.keys((await listApiTokens(db, user.id))[0]!).sort(), [
    'app_ids',
    'created_at',
    'expires_at',
    'id',
    'last_used_at',
    'name',
    'scopes',
  ]);
  assert.equal(await revokeApiToken(db, user.id, theirs.id, T0), false);
  assert.notEqual(resolveApiToken(db, theirs.token, T0), null);
  assert.notEqual(resolveApiToken(db, forever.token, T0), null, 'cached');
  assert.equal(await revokeApiToken(db, user.id, forever.id, T0 + 7), true);
  assert.equal(resolveApiToken(db, forever.token, T0), null, 'revoked at once, cache included');
  assert.equal(
    (
      await db
        .selectFrom('api_tokens')
        .select('revoked_at')
        .where('id', '=', forever.id)
        .executeTakeFirstOrThrow()
    ).revoked_at,
    iso(T0 + 7),
  );
  assert.equal(await revokeApiToken(db, user.id, forever.id, T0 + 8), false, 'already revoked');
  assert.deepEqual(
    (await listApiTokens(db, user.id)).map((x) => x.name),
    ['ci'],
  );
  await db
    .updateTable('api_tokens')
    .set({ step_up_until: iso(T0 + 9) })
    .where('id', '=', theirs.id)
    .execute();
  invalidateCredentials();
  assert.equal((resolveApiToken(db, theirs.token, T0) as ResolvedToken)!.stepUpUntil, iso(T0 + 9));
  await db.destroy();
});

test('principal: a bearer header alone decides (any case of the scheme); else the session cookie', async () => {
  const { env, db, user } = await setup();
  invalidateCredentials();
  const t = await createApiToken(db, user.id, 'ci', null, env.now());
  const s = await createSession(
    db,
    user.id,
    { ip: null, userAgent: null },
    { idleSeconds: env.config.sessionIdleSeconds, maxSeconds: env.config.sessionMaxSeconds },
    env.now(),
  );
  assert.equal(authenticate(env, headers({})), null);
  for (const h of [`Bearer ${t.token}`, `bearer ${t.token}`, `BEARER\t${t.token}`, `Bearer  ${t.token} `]) {
    assert.deepEqual(
      authenticate(env, headers({ authorization: h })),
      {
        kind: 'token',
        user: {
          id: user.id,
          username: 'alice',
          totp_enabled: false,
          role: 'owner',
          app_ids: null,
          sso: false,
        },
        credentialId: t.id,
        stepUpUntil: null,
        ...accessOf('owner', null),
      },
      h,
    );
  }
  for (const h of [
    '',
    'Basic abc',
    `Bearer`,
    `Bearer ${t.token} x`,
    `Token ${t.token}`,
    `xBearer ${t.token}`,
  ]) {
    assert.throws(
      () => authenticate(env, headers({ authorization: h, cookie: `${SESSION_COOKIE}=${s.raw}` })),
      (e: unknown) => e instanceof HttpError && e.status === 401 && /Bearer <token>/.test(e.message),
      JSON.stringify(h),
    );
  }
  assert.throws(
    () =>
      authenticate(
        env,
        headers({ authorization: 'Bearer svc_' + 'a'.repeat(43), cookie: `${SESSION_COOKIE}=${s.raw}` }),
      ),
    (e: unknown) =>
      e instanceof HttpError && e.code === 'unauthorized' && /invalid, expired or revoked/.test(e.message),
  );
  assert.deepEqual(authenticate(env, headers({ cookie: `a=b; ${SESSION_COOKIE}=${s.raw}` })), {
    kind: 'session',
    user: { id: user.id, username: 'alice', totp_enabled: false, role: 'owner', app_ids: null, sso: false },
    credentialId: s.id,
    stepUpUntil: null,
    rawSession: s.raw,
    ...accessOf('owner', null),
  });
  assert.equal(authenticate(env, headers({ cookie: `${SESSION_COOKIE}=${'a'.repeat(43)}` })), null);
  assert.equal(authenticate(env, headers({ cookie: `other=${s.raw}` })), null);
  assert.equal(BEARER.test('bearer x'), true);
  assert.deepEqual([SESSION_COOKIE, CSRF_COOKIE, PRE_COOKIE], ['svc_session', 'svc_csrf', 'svc_pre']);
  await db.destroy();
});

test('step-up: recent only while its deadline is ahead, bound to the credential that did it', async () => {
  const { db, user } = await setup();
  const p = (stepUpUntil: string | null): Principal => ({
    kind: 'session',
    user,
    credentialId: 'x',
    stepUpUntil,
    permissions: new Set(),
    appIds: null,
  });
  assert.equal(hasRecentStepUp(p(null), T0), false);
  assert.equal(hasRecentStepUp(p(iso(T0 + 1)), T0), true);
  assert.equal(hasRecentStepUp(p(iso(T0)), T0), false);
  assert.equal(STEP_UP_SECONDS, 300);
  const s = await createSession(db, user.id, { ip: null, userAgent: null }, LIMITS, T0);
  const s2 = await createSession(db, user.id, { ip: null, userAgent: null }, LIMITS, T0);
  const t = await createApiToken(db, user.id, 'ci', null, T0);
  const t2 = await createApiToken(db, user.id, 'ci2', null, T0);
  assert.equal((resolveSession(db, s.raw, LIMITS, T0) as ResolvedSession)!.stepUpUntil, null);
  assert.equal((resolveApiToken(db, t.token, T0) as ResolvedToken)!.stepUpUntil, null);
  assert.equal(
    await markStepUp(
      db,
      { kind: 'session', user, credentialId: s.id, stepUpUntil: null, permissions: new Set(), appIds: null },
      T0,
    ),
    iso(T0 + 300_000),
  );
  assert.equal(
    (resolveSession(db, s.raw, LIMITS, T0) as ResolvedSession)!.stepUpUntil,
    iso(T0 + 300_000),
    'the cache was cleared',
  );
  assert.equal((resolveSession(db, s2.raw, LIMITS, T0) as ResolvedSession)!.stepUpUntil, null);
  assert.equal((resolveApiToken(db, t.token, T0) as ResolvedToken)!.stepUpUntil, null);
  assert.equal(
    await markStepUp(
      db,
      { kind: 'token', user, credentialId: t.id, stepUpUntil: null, permissions: new Set(), appIds: null },
      T0 + 1,
    ),
    iso(T0 + 300_001),
  );
  assert.equal((resolveApiToken(db, t.token, T0 + 1) as ResolvedToken)!.stepUpUntil, iso(T0 + 300_001));
  assert.equal((resolveApiToken(db, t2.token, T0 + 1) as ResolvedToken)!.stepUpUntil, null);
  await db.destroy();
});

test('users: public view, lookups, count, delete with everything, a new password ends the other sessions', async () => {
  const { db, user } = await setup();
  const one = { role: 'owner', app_ids: null };
  const sso = { sso_subject: null };
  assert.deepEqual(publicUser({ id: 'i', username: 'u', totp_enabled: 1, ...one, ...sso }), {
    id: 'i',
    username: 'u',
    totp_enabled: true,
    ...one,
    sso: false,
  });
  assert.deepEqual(publicUser({ id: 'i', username: 'u', totp_enabled: 0, ...one, ...sso }), {
    id: 'i',
    username: 'u',
    totp_enabled: false,
    ...one,
    sso: false,
  });
  // A list on an admin is ignored (admins reach every app); a deployer's is kept.
  assert.deepEqual(
    publicUser({ id: 'i', username: 'u', totp_enabled: 0, role: 'admin', app_ids: '["a"]', ...sso }).app_ids,
    null,
  );
  assert.deepEqual(
    publicUser({ id: 'i', username: 'u', totp_enabled: 0, role: 'deployer', app_ids: '["a"]', ...sso })
      .app_ids,
    ['a'],
  );
  assert.deepEqual(user, { id: user.id, username: 'alice', totp_enabled: false, ...one, sso: false });
  const row = await findUserByName(db, 'alice');
  assert.equal(row!.password_hash, 'scrypt$10$8$1$x$y');
  assert.equal(row!.totp_enabled, 0);
  assert.equal(row!.totp_secret, null);
  assert.equal(row!.created_at, row!.updated_at);
  assert.equal((await findUser(db, user.id))!.username, 'alice');
  // One name without regard to case (migration 0022): Alice is alice.
  assert.equal((await findUserByName(db, 'Alice'))?.id, user.id);
  assert.equal(await findUserByName(db, 'alicia'), undefined);
  assert.equal(await findUser(db, 'nobody'), undefined);
  assert.equal(await countUsers(db), 1);
  const bob = await insertUser(db, 'bob', 'h');
  assert.equal(await countUsers(db), 2);
  const keep = await createSession(db, user.id, { ip: null, userAgent: null }, LIMITS, T0);
  const drop = await createSession(db, user.id, { ip: null, userAgent: null }, LIMITS, T0);
  const bobs = await createSession(db, bob.id, { ip: null, userAgent: null }, LIMITS, T0);
  assert.notEqual(resolveSession(db, drop.raw, LIMITS, T0), null);
  await setPassword(db, user.id, 'new-hash', keep.id, T0 + 5);
  const after = await findUser(db, user.id);
  assert.equal(after!.password_hash, 'new-hash');
  assert.equal(after!.updated_at, iso(T0 + 5));
  assert.notEqual(resolveSession(db, keep.raw, LIMITS, T0), null);
  assert.equal(resolveSession(db, drop.raw, LIMITS, T0), null, 'ended at once, cache included');
  assert.notEqual(resolveSession(db, bobs.raw, LIMITS, T0), null, 'another operator keeps theirs');
  await setPassword(db, user.id, 'newer', null, T0 + 6);
  assert.equal(resolveSession(db, keep.raw, LIMITS, T0), null, 'without a session to keep, all end');
  const tok = await createApiToken(db, bob.id, 't', null, T0);
  assert.notEqual(resolveApiToken(db, tok.token, T0), null);
  assert.equal(await deleteUser(db, bob.id), true);
  assert.equal(resolveApiToken(db, tok.token, T0), null);
  assert.equal(resolveSession(db, bobs.raw, LIMITS, T0), null);
  assert.equal(await deleteUser(db, bob.id), false);
  assert.equal(await countUsers(db), 1);
  assert.ok(USERNAME_PATTERN.test('a'));
  assert.ok(USERNAME_PATTERN.test('a'.repeat(64)));
  assert.ok(!USERNAME_PATTERN.test('a'.repeat(65)));
  assert.ok(!USERNAME_PATTERN.test('.a'));
  assert.ok(USERNAME_PATTERN.test('a.b_c@d-e'));
  assert.ok(!USERNAME_PATTERN.test('a b'));
  assert.deepEqual([PASSWORD_MIN, PASSWORD_MAX], [12, 1024]);
  await db.destroy();
});

test('setup: one token (0600) while no operator exists, checked in constant time, gone once one exists', async () => {
  const { db } = await setup();
  const dir = mkdtempSync(join(tmpdir(), 'svc-setup-'));
  try {
    assert.equal(setupTokenPath(dir), join(dir, 'setup.token'));
    assert.deepEqual(await prepareSetup(db, dir), { open: false, created: null }, 'an operator exists');
    await db.deleteFrom('users').execute();
    assert.equal(await readSetupToken(dir), null);
    assert.equal(await checkSetupToken(dir, ''), false);
    assert.equal(await checkSetupToken(dir, '\u0000no-token'), false, 'the stand-in never matches');
    const first = await prepareSetup(db, dir);
    assert.equal(first.open, true);
    assert.equal(first.created!.length, 32);
    assert.equal(readFileSync(setupTokenPath(dir), 'utf8'), first.created + '\n');
    assert.equal(statSync(setupTokenPath(dir)).mode & 0o777, 0o600);
    assert.equal(await readSetupToken(dir), first.created);
    assert.deepEqual(await prepareSetup(db, dir), { open: true, created: null }, 'the existing token stays');
    assert.equal(await readSetupToken(dir), first.created);
    assert.equal(await checkSetupToken(dir, first.created!), true);
    assert.equal(await checkSetupToken(dir, first.created! + 'x'), false);
    assert.equal(await checkSetupToken(dir, first.created!.slice(1)), false);
    writeFileSync(setupTokenPath(dir), '  \n');
    assert.equal(await readSetupToken(dir), null, 'an empty file is no token');
    assert.equal(await checkSetupToken(dir, ''), false);
    const second = await prepareSetup(db, dir);
    assert.equal(second.open, true);
    assert.equal(second.created, null, 'a file already there (empty) is not overwritten');
    await closeSetup(dir);
    assert.equal(await readSetupToken(dir), null);
    await closeSetup(dir);
    const third = await prepareSetup(db, dir);
    assert.equal(typeof third.created, 'string');
    await insertUser(db, 'op', 'x');
    assert.deepEqual(await prepareSetup(db, dir), { open: false, created: null });
    assert.equal(await readSetupToken(dir), null, 'removed once an operator exists');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.destroy();
  }
});

test('signing key: created once and sealed; a key in clear is sealed in place; without a master key it stays in clear', async () => {
  const { db } = await setup();
  const sealer = createSealer(Buffer.alloc(32, 0xbb));
  const none = createSealer(null);
  const stored = async () =>
    (
      await db
        .selectFrom('settings')
        .select('value')
        .where('key', '=', SIGNING_KEY_SETTING)
        .executeTakeFirstOrThrow()
    ).value;
  const booted = await stored();
  assert.ok(isSealed(booted));
  const k = await loadSigningKey(db, sealer);
  assert.equal(k.length, 32);
  assert.deepEqual(await loadSigningKey(db, sealer), k, 'the same key every time');
  assert.equal(await stored(), booted, 'an already sealed key is left alone');
  assert.deepEqual(Buffer.from(sealer.open(booted, SIGNING_KEY_BINDING), 'base64url'), Buffer.from(k));
  assert.equal(isSealed('v1.x'), true);
  assert.equal(isSealed('xv1.'), false);
  // First boot without a master key: created in clear.
  await db.deleteFrom('settings').where('key', '=', SIGNING_KEY_SETTING).execute();
  const clear = await loadSigningKey(db, none);
  assert.equal(clear.length, 32);
  assert.equal(await stored(), Buffer.from(clear).toString('base64url'));
  assert.deepEqual(await loadSigningKey(db, none), clear);
  // A later boot with a master key seals it, keeping the same key.
  assert.deepEqual(await loadSigningKey(db, sealer), clear);
  const sealed = await stored();
  assert.ok(isSealed(sealed));
  assert.equal(sealer.open(sealed, SIGNING_KEY_BINDING), Buffer.from(clear).toString('base64url'));
  // First boot with a master key: sealed straight away.
  await db.deleteFrom('settings').where('key', '=', SIGNING_KEY_SETTING).execute();
  const fresh = await loadSigningKey(db, sealer);
  assert.ok(isSealed(await stored()));
  assert.deepEqual(await loadSigningKey(db, sealer), fresh);
  assert.notDeepEqual(fresh, clear);
  await assert.rejects(loadSigningKey(db, createSealer(Buffer.alloc(32, 1))));
  await db.destroy();
});

test('pre-auth tokens: HS256 of purpose totp for a user, valid 5 minutes, refused when forged, altered, expired or oversized', async () => {
  const key = new Uint8Array(32).fill(5);
  const tok = await signPreAuth(key, 'u1', T0);
  const [h, p] = tok
    .split('.')
    .slice(0, 2)
    .map((x) => JSON.parse(Buffer.from(x, 'base64url').toString()));
  assert.deepEqual(h, { alg: 'HS256', typ: 'svc-pre' });
  assert.equal(p.sub, 'u1');
  assert.equal(p.purpose, 'totp');
  assert.equal(p.iat, T0 / 1000);
  assert.equal(p.exp, T0 / 1000 + PRE_AUTH_SECONDS);
  assert.equal(PRE_AUTH_SECONDS, 300);
  assert.equal(Buffer.from(p.jti, 'base64url').length, 12);
  assert.notEqual(await signPreAuth(key, 'u1', T0), tok);
  assert.equal(await verifyPreAuth(key, tok, T0), 'u1');
  assert.equal(await verifyPreAuth(key, tok, T0 + 299_000), 'u1');
  assert.equal(await verifyPreAuth(key, tok, T0 + 300_000), null, 'expired');
  assert.equal(await verifyPreAuth(new Uint8Array(32).fill(6), tok, T0), null, 'another key');
  const [hh, pp, ss] = tok.split('.');
  const forge = async (header: object, payload: object) => {
    const { SignJWT } = await import('jose');
    return new SignJWT(payload as Record<string, unknown>)
      .setProtectedHeader(header as { alg: string })
      .sign(key);
  };
  assert.equal(
    await verifyPreAuth(
      key,
      await forge({ alg: 'HS256', typ: 'svc-pre' }, { purpose: 'login', sub: 'u1', exp: T0 / 1000 + 60 }),
      T0,
    ),
    null,
    'another purpose',
  );
  assert.equal(
    await verifyPreAuth(
      key,
      await forge({ alg: 'HS256', typ: 'JWT' }, { purpose: 'totp', sub: 'u1', exp: T0 / 1000 + 60 }),
      T0,
    ),
    null,
    'another type',
  );
  assert.equal(
    await verifyPreAuth(
      key,
      await forge({ alg: 'HS512', typ: 'svc-pre' }, { purpose: 'totp', sub: 'u1', exp: T0 / 1000 + 60 }),
      T0,
    ),
    null,
    'another algorithm',
  );
  assert.equal(
    await verifyPreAuth(
      key,
      await forge({ alg: 'HS256', typ: 'svc-pre' }, { purpose: 'totp', exp: T0 / 1000 + 60 }),
      T0,
    ),
    null,
    'no subject',
  );
  assert.equal(
    await verifyPreAuth(
      key,
      await forge({ alg: 'HS256', typ: 'svc-pre' }, { purpose: 'totp', sub: 'u2', exp: T0 / 1000 + 60 }),
      T0,
    ),
    'u2',
  );
  const otherPayload = Buffer.from(JSON.stringify({ ...p, sub: 'admin' })).toString('base64url');
  assert.equal(await verifyPreAuth(key, [hh, otherPayload, ss].join('.'), T0), null, 'altered');
  assert.equal(await verifyPreAuth(key, `${hh}.${pp}.`, T0), null);
  assert.equal(await verifyPreAuth(key, 'garbage', T0), null);
  const padded = await forge(
    { alg: 'HS256', typ: 'svc-pre' },
    { purpose: 'totp', sub: 'u1', exp: T0 / 1000 + 60, pad: 'x'.repeat(2000) },
  );
  assert.ok(padded.length > 2048);
  assert.equal(await verifyPreAuth(key, padded, T0), null, 'oversized');
  const justFits = await forge(
    { alg: 'HS256', typ: 'svc-pre' },
    { purpose: 'totp', sub: 'u1', exp: T0 / 1000 + 60, pad: 'x'.repeat(1400) },
  );
  assert.ok(justFits.length <= 2048);
  assert.equal(await verifyPreAuth(key, justFits, T0), 'u1');
});

test('login cookies: a new session rotates the old one out; session, CSRF, cleared pre-auth and device cookies; logout clears', async () => {
  const { env, db, user } = await setup();
  const client = { ip: '10.1.1.1', secure: true, userAgent: 'UA' };
  const req = (cookie?: string) =>
    new Request('http://x/api/auth/login', { headers: cookie ? { cookie } : {} });
  const h = await startSession(env, req(), client, user.id);
  const cookies = h.getSetCookie();
  assert.equal(cookies.length, 4);
  const raw = /^svc_session=([^;]+); Path=\/; SameSite=Lax; Max-Age=(\d+); HttpOnly; Secure$/.exec(
    cookies[0]!,
  );
  assert.ok(raw, cookies[0]);
  assert.equal(Number(raw[2]), env.config.sessionMaxSeconds);
  assert.equal(
    cookies[1],
    `svc_csrf=${csrfFor(env.signingKey, raw[1]!)}; Path=/; SameSite=Lax; Max-Age=${env.config.sessionMaxSeconds}; Secure`,
  );
  assert.equal(cookies[2], 'svc_pre=; Path=/; SameSite=Lax; Max-Age=0; HttpOnly; Secure');
  const dev =
    /^svc_device=([^;]+); Path=\/api\/auth; SameSite=Strict; Max-Age=15552000; HttpOnly; Secure$/.exec(
      cookies[3]!,
    );
  assert.ok(dev, cookies[3]);
  assert.equal(readDevice(env.signingKey, decodeURIComponent(dev[1]!))!.userId, user.id);
  const limits = { idleSeconds: env.config.sessionIdleSeconds, maxSeconds: env.config.sessionMaxSeconds };
  const s = resolveSession(db, raw[1]!, limits, env.now()) as ResolvedSession | null;
  assert.equal(s!.user.id, user.id);
  const row = await db.selectFrom('sessions').selectAll().where('id', '=', s!.id).executeTakeFirstOrThrow();
  assert.deepEqual([row.ip, row.user_agent], ['10.1.1.1', 'UA']);
  // A login from a browser that carries a session replaces it.
  const h2 = await startSession(
    env,
    req(`${SESSION_COOKIE}=${raw[1]}`),
    { ...client, secure: false },
    user.id,
  );
  assert.equal(resolveSession(db, raw[1]!, limits, env.now()), null, 'the old session is gone');
  assert.ok(h2.getSetCookie().every((c) => !c.includes('Secure')));
  assert.equal((await db.selectFrom('sessions').select('id').execute()).length, 1);
  assert.deepEqual(endSessionCookies({ ...client, secure: true }).getSetCookie(), [
    'svc_session=; Path=/; SameSite=Lax; Max-Age=0; HttpOnly; Secure',
    'svc_csrf=; Path=/; SameSite=Lax; Max-Age=0; Secure',
  ]);
  assert.deepEqual(endSessionCookies({ ...client, secure: false }).getSetCookie(), [
    'svc_session=; Path=/; SameSite=Lax; Max-Age=0; HttpOnly',
    'svc_csrf=; Path=/; SameSite=Lax; Max-Age=0',
  ]);
  await db.destroy();
});

test('TOTP: enrolment needs a code from the pending secret; codes and recovery codes are burnt once; disable clears all', async () => {
  const { env, db, user } = await setup();
  const sealer = env.sealer;
  const secret = await newTotpSecret();
  assert.equal(totpBinding('u1'), 'user:u1:totp');
  assert.equal(ISSUER, 'svc');
  const url = await otpauthUrl('alice', secret);
  assert.ok(url.startsWith('otpauth://totp/'), url);
  assert.ok(url.includes(`secret=${secret}`) && url.includes('issuer=svc') && url.includes('alice'), url);
  const pending = sealer.seal(secret, totpBinding(user.id) + ':pending');
  const now = T0;
  assert.equal(
    await enableTotp(
      db,
      sealer,
      user.id,
      pending,
      '000000' === (await totpCode(secret, { epoch: now / 1000 })) ? '111111' : '000000',
      now,
    ),
    null,
    'a wrong code enrols nothing',
  );
  assert.equal((await findUser(db, user.id))!.totp_enabled, 0);
  assert.throws(() => sealer.open(pending, totpBinding(user.id)), 'the pending secret is bound to :pending');
  const code = await totpCode(secret, { epoch: now / 1000 });
  const codes = await enableTotp(db, sealer, user.id, pending, code, now);
  assert.equal(codes!.length, 10);
  const row = (await findUser(db, user.id))!;
  assert.equal(row.totp_enabled, 1);
  assert.equal(row.totp_pending, null);
  assert.equal(sealer.open(row.totp_secret!, totpBinding(user.id)), secret);
  assert.equal(row.totp_last_step, Math.floor(now / 30_000));
  assert.equal(row.updated_at, iso(now));
  const stored = await db
    .selectFrom('recovery_codes')
    .select(['code_hash', 'used_at'])
    .where('user_id', '=', user.id)
    .execute();
  assert.equal(stored.length, 10);
  const bare = (c: string) =>
    createHash('sha256')
      .update('recovery:' + c.toLowerCase().replace('-', ''))
      .digest('hex');
  assert.ok(stored.every((r) => r.code_hash.startsWith('hmac1:') && r.used_at === null));
  assert.ok(stored.some((r) => r.code_hash === 'hmac1:' + sealer.digest('recovery-code', bare(codes![0]!))));
  // The enrolment code's step is used: it cannot log in again.
  assert.equal(await consumeSecondFactor(db, sealer, user.id, code, now), false);
  const next = await totpCode(secret, { epoch: now / 1000 + 30 });
  assert.equal(await consumeSecondFactor(db, sealer, user.id, ` ${next} `, now + 30_000), true);
  assert.equal(await consumeSecondFactor(db, sealer, user.id, next, now + 30_000), false, 'burnt');
  assert.equal((await findUser(db, user.id))!.totp_last_step, Math.floor(now / 30_000) + 1);
  assert.equal(await consumeSecondFactor(db, sealer, user.id, 'abcde', now), false);
  // Recovery codes: any case, with or without the dash, once.
  const rc = codes![1]!;
  assert.equal(await consumeSecondFactor(db, sealer, user.id, rc.toUpperCase().replace('-', ''), now), true);
  assert.equal(await consumeSecondFactor(db, sealer, user.id, rc, now), false, 'used');
  const used = await db
    .selectFrom('recovery_codes')
    .select('used_at')
    .where('used_at', 'is not', null)
    .execute();
  assert.deepEqual(
    used.map((u) => u.used_at),
    [iso(now)],
  );
  assert.equal(await consumeSecondFactor(db, sealer, user.id, 'aaaaa-aaaaa', now), false, 'not one of ours');
  // Another operator cannot use them; an operator without TOTP or unknown has no second factor.
  const bob = await insertUser(db, 'bob', 'x');
  assert.equal(await consumeSecondFactor(db, sealer, bob.id, codes![2]!, now), false);
  assert.equal(await consumeSecondFactor(db, sealer, 'nobody', codes![2]!, now), false);
  await db.updateTable('users').set({ totp_enabled: 1 }).where('id', '=', bob.id).execute();
  assert.equal(
    await consumeSecondFactor(db, sealer, bob.id, codes![2]!, now),
    false,
    'enabled without a secret',
  );
  // A fresh step on an account whose last step is null is taken once.
  await db.updateTable('users').set({ totp_last_step: null }).where('id', '=', user.id).execute();
  const later = now + 600_000;
  const c3 = await totpCode(secret, { epoch: later / 1000 });
  assert.equal(await consumeSecondFactor(db, sealer, user.id, c3, later), true);
  assert.equal(await consumeSecondFactor(db, sealer, user.id, c3, later), false);
  // Re-enrolment replaces the recovery codes.
  const again = await enableTotp(
    db,
    sealer,
    user.id,
    pending,
    await totpCode(secret, { epoch: later / 1000 + 60 }),
    later + 60_000,
  );
  assert.equal(
    (await db.selectFrom('recovery_codes').select('id').where('user_id', '=', user.id).execute()).length,
    10,
  );
  assert.equal(await consumeSecondFactor(db, sealer, user.id, codes![3]!, now), false, 'old codes are gone');
  assert.equal(await consumeSecondFactor(db, sealer, user.id, again![0]!, now), true);
  await disableTotp(db, user.id, later + 1);
  const off = (await findUser(db, user.id))!;
  assert.deepEqual(
    [off.totp_enabled, off.totp_secret, off.totp_pending, off.totp_last_step, off.updated_at],
    [0, null, null, null, iso(later + 1)],
  );
  assert.equal(
    (await db.selectFrom('recovery_codes').select('id').where('user_id', '=', user.id).execute()).length,
    0,
  );
  assert.equal(await consumeSecondFactor(db, sealer, user.id, again![1]!, now), false);
  assert.equal(await checkTotp(secret, '12345', null, now), null);
  await db.destroy();
});

test('TOTP: recovery codes stored bare by older builds are re-keyed at boot, once, and still work', async () => {
  const { env, db, user } = await setup();
  const sealer = env.sealer;
  const secret = await newTotpSecret();
  await db
    .updateTable('users')
    .set({ totp_enabled: 1, totp_secret: sealer.seal(secret, totpBinding(user.id)) })
    .where('id', '=', user.id)
    .execute();
  const bare = createHash('sha256').update('recovery:abcdefghjk').digest('hex');
  await db
    .insertInto('recovery_codes')
    .values([
      { user_id: user.id, code_hash: bare, used_at: null },
      { user_id: user.id, code_hash: 'hmac1:already', used_at: null },
    ])
    .execute();
  assert.equal(await rehashRecoveryCodes(db, createSealer(null)), 0, 'nothing without a master key');
  assert.equal(await rehashRecoveryCodes(db, sealer), 1);
  const hashes = (
    await db.selectFrom('recovery_codes').select('code_hash').orderBy('code_hash').execute()
  ).map((r) => r.code_hash);
  assert.deepEqual(hashes.sort(), ['hmac1:' + sealer.digest('recovery-code', bare), 'hmac1:already'].sort());
  assert.equal(await rehashRecoveryCodes(db, sealer), 0, 'idempotent');
  assert.equal(await consumeSecondFactor(db, sealer, user.id, 'abcde-fghjk', T0), true);
  await db.destroy();
});
