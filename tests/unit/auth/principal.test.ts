// Unit tests of the request principal (lib/auth/principal.ts: a bearer header or the session
// cookie) and of step-up (lib/auth/stepup.ts: recent, bound to the credential that did it).
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessOf } from '#lib/auth/access.js';
import { HttpError } from '#lib/http/errors.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import { resolveSession, type ResolvedSession } from '#lib/auth/sessions.js';
import { createSession } from '#lib/auth/sessions-store.js';
import { createApiToken, resolveApiToken, type ResolvedToken } from '#lib/auth/tokens.js';
import { authenticate, BEARER, SESSION_COOKIE, CSRF_COOKIE, PRE_COOKIE } from '#lib/auth/principal.js';
import { hasRecentStepUp, markStepUp, STEP_UP_SECONDS } from '#lib/auth/stepup.js';
import type { Principal } from '#lib/http/handler.js';
import { T0, LIMITS, iso, headers, setup } from './_setup.js';

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
