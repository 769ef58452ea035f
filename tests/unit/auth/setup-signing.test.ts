// Unit tests of first-boot setup (lib/auth/setup.ts: the one 0600 token), the signing key and
// the pre-auth tokens it signs (lib/auth/signing.ts).
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSealer } from '#lib/crypto/seal.js';
import { insertUser } from '#lib/auth/users-store.js';
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
import { T0, setup } from './_setup.js';

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
