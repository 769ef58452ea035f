// Unit tests of TOTP enrolment against the database (lib/auth/totp.ts): a code from the pending
// secret, codes and recovery codes burnt once, disable clearing all, and recovery codes re-keyed
// at boot. The algorithm's vectors are in totp.test.ts.
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createSealer } from '#lib/crypto/seal.js';
import { insertUser, findUser } from '#lib/auth/users-store.js';
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
import { T0, iso, setup } from './_setup.js';

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
