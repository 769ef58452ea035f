// Unit tests of lib/auth's operators: the public view, lookups, count, delete with everything, and
// a new password ending the other sessions.
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveSession } from '#lib/auth/sessions.js';
import { createSession } from '#lib/auth/sessions-store.js';
import { createApiToken, resolveApiToken } from '#lib/auth/tokens.js';
import { publicUser, USERNAME_PATTERN, PASSWORD_MAX, PASSWORD_MIN } from '#lib/auth/users.js';
import {
  insertUser,
  findUser,
  findUserByName,
  countUsers,
  deleteUser,
  setPassword,
} from '#lib/auth/users-store.js';
import { T0, LIMITS, iso, setup } from './_setup.js';

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
