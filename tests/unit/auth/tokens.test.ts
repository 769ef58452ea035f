// Unit tests of lib/auth's API tokens: their form, stored hashed, revoked, expired or unknown ones
// resolving to nothing, and last-used writes.
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { accessOf } from '#lib/auth/access.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '#lib/crypto/random.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import {
  createApiToken,
  resolveApiToken,
  listApiTokens,
  TOKEN_PATTERN,
  type ResolvedToken,
} from '#lib/auth/tokens.js';
import { revokeApiToken } from '#lib/auth/tokens-store.js';
import { insertUser } from '#lib/auth/users-store.js';
import { T0, iso, setup } from './_setup.js';

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
