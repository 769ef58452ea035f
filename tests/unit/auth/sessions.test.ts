// Unit tests of lib/auth's sessions: stored hashed, idle and absolute expiry, listing and revoking;
// and the login cookies (lib/auth/login.ts) a new session sets and logout clears.
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { accessOf } from '#lib/auth/access.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { sha256Hex } from '#lib/crypto/random.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import { readDevice } from '#lib/auth/guard.js';
import { resolveSession, csrfFor, type ResolvedSession } from '#lib/auth/sessions.js';
import { createSession, deleteSessionByRaw, listSessions, revokeSession } from '#lib/auth/sessions-store.js';
import { SESSION_COOKIE } from '#lib/auth/principal.js';
import { insertUser } from '#lib/auth/users-store.js';
import { startSession, endSessionCookies } from '#lib/auth/login.js';
import { T0, LIMITS, iso, setup } from './_setup.js';

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
