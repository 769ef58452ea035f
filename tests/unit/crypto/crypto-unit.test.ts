// Unit tests of lib/crypto beyond the sealing round trip (crypto.test.ts): the master key's
// sources and refusals, the keyed digest, id encoding, and the boot-time check of sealed rows.
// Fast on purpose: `npm run mutation` runs this file once per mutant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { createDecipheriv, createHash, createHmac, hkdfSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  chooseMasterKey,
  readMasterKeyFile,
  masterKeyPath,
  MasterKeyError,
  MASTER_KEY_FILE,
} from '#lib/crypto/master-key.js';
import { createSealer, requireSealer, SealError } from '#lib/crypto/seal.js';
import { newId, randomToken, sha256Hex, safeEqual, ID_PATTERN } from '#lib/crypto/random.js';
import { hasSealedData, unopenableSealedData } from '#lib/instance/sealed-rows.js';
import { HttpError } from '#lib/http/errors.js';
import { memoryEnv } from '../../_support/env.js';
import { SIGNING_KEY_SETTING, SIGNING_KEY_BINDING } from '#lib/auth/signing.js';
import { totpBinding } from '#lib/auth/totp.js';
import { envBinding } from '#lib/apps/env.js';
import { webhookBinding } from '#lib/webhooks/store.js';
import { keyBinding } from '#lib/keys/store.js';

const KEY = Buffer.alloc(32, 7);

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'svc-crypto-'));
}

test('master key: an explicit key wins over the file, the file is read and tightened to 0600', () => {
  const dir = scratch();
  try {
    assert.equal(masterKeyPath(dir), join(dir, MASTER_KEY_FILE));
    assert.equal(MASTER_KEY_FILE, 'master.key');
    assert.equal(readMasterKeyFile(dir), null);
    writeFileSync(masterKeyPath(dir), `  ${'ab'.repeat(32)}\n`, { mode: 0o644 });
    chmodSync(masterKeyPath(dir), 0o644);
    assert.deepEqual(readMasterKeyFile(dir), Buffer.alloc(32, 0xab));
    const explicit = Buffer.alloc(32, 1);
    const a = chooseMasterKey(dir, explicit, { generate: true, hasSealedData: true });
    assert.deepEqual(a, { key: explicit, source: 'env', generated: false, fileKey: Buffer.alloc(32, 0xab) });
    assert.equal(statSync(masterKeyPath(dir)).mode & 0o777, 0o600);
    chmodSync(masterKeyPath(dir), 0o644);
    const b = chooseMasterKey(dir, null, { generate: true, hasSealedData: true });
    assert.deepEqual(b, {
      key: Buffer.alloc(32, 0xab),
      source: 'file',
      generated: false,
      fileKey: Buffer.alloc(32, 0xab),
    });
    assert.equal(statSync(masterKeyPath(dir)).mode & 0o777, 0o600);
    // An explicit key without a file: nothing is written.
    rmSync(masterKeyPath(dir));
    const c = chooseMasterKey(dir, explicit, { generate: true, hasSealedData: false });
    assert.deepEqual(c, { key: explicit, source: 'env', generated: false, fileKey: null });
    assert.equal(readMasterKeyFile(dir), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('master key: a file holding anything but 64 hex characters, or unreadable, stops the boot naming the file', () => {
  const dir = scratch();
  try {
    for (const bad of [
      '',
      'ab'.repeat(31),
      'ab'.repeat(33),
      'zz'.repeat(32),
      `${'ab'.repeat(32)}x`,
      `x${'ab'.repeat(32)}`,
    ]) {
      writeFileSync(masterKeyPath(dir), bad);
      assert.throws(
        () => readMasterKeyFile(dir),
        (e: unknown) =>
          e instanceof MasterKeyError &&
          e.message.includes(masterKeyPath(dir)) &&
          /64 hexadecimal/.test(e.message),
        JSON.stringify(bad),
      );
      assert.throws(
        () => chooseMasterKey(dir, Buffer.alloc(32, 1), { generate: true, hasSealedData: false }),
        MasterKeyError,
      );
    }
    rmSync(masterKeyPath(dir));
    mkdirSync(masterKeyPath(dir));
    assert.throws(
      () => readMasterKeyFile(dir),
      (e: unknown) =>
        e instanceof MasterKeyError &&
        /cannot read the master key file/.test(e.message) &&
        e.message.includes(masterKeyPath(dir)),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('master key: generated once on first boot (0600, 64 hex), never over sealed data, never without generate', () => {
  const dir = scratch();
  try {
    assert.deepEqual(chooseMasterKey(dir, null, { generate: false, hasSealedData: false }), {
      key: null,
      source: null,
      generated: false,
      fileKey: null,
    });
    assert.equal(readMasterKeyFile(dir), null);
    assert.throws(
      () => chooseMasterKey(dir, null, { generate: true, hasSealedData: true }),
      (e: unknown) =>
        e instanceof MasterKeyError &&
        e.message.includes('SVC_MASTER_KEY is not set') &&
        e.message.includes(masterKeyPath(dir)),
    );
    assert.throws(() => chooseMasterKey(dir, null, { generate: false, hasSealedData: true }), MasterKeyError);
    assert.equal(readMasterKeyFile(dir), null, 'nothing written on a refusal');
    const g = chooseMasterKey(dir, null, { generate: true, hasSealedData: false });
    assert.equal(g.generated, true);
    assert.equal(g.source, 'file');
    assert.equal(g.key!.length, 32);
    assert.deepEqual(g.fileKey, g.key);
    const text = readFileSync(masterKeyPath(dir), 'utf8');
    assert.equal(text, g.key!.toString('hex') + '\n');
    assert.equal(statSync(masterKeyPath(dir)).mode & 0o777, 0o600);
    const again = chooseMasterKey(dir, null, { generate: true, hasSealedData: false });
    assert.deepEqual(again, { key: g.key, source: 'file', generated: false, fileKey: g.key });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sealer: a master key of another length is refused; requireSealer throws the 503 only without a key', () => {
  for (const n of [0, 16, 31, 33, 64])
    assert.throws(() => createSealer(Buffer.alloc(n, 1)), /32 bytes/, `${n} bytes`);
  assert.doesNotThrow(() => requireSealer(createSealer(KEY)));
  assert.throws(
    () => requireSealer(createSealer(null)),
    (e: unknown) => e instanceof HttpError && e.status === 503 && /SVC_MASTER_KEY/.test(e.message),
  );
  const none = createSealer(null);
  assert.throws(
    () => none.open('v1.a.b.c', 'x'),
    (e: unknown) => e instanceof HttpError && e.code === 'service_unavailable',
  );
  assert.throws(
    () => none.digest('p', 'v'),
    (e: unknown) => e instanceof HttpError && e.code === 'service_unavailable',
  );
  assert.equal(createSealer(KEY).available, true);
});

test('sealer: the envelope is v1 with a 12-byte iv and 16-byte tag, the key is derived, the binding is associated data', () => {
  const s = createSealer(KEY);
  const env = s.seal('hello', 'row:1');
  const [v, iv, ct, tag] = env.split('.');
  assert.equal(v, 'v1');
  assert.equal(Buffer.from(iv!, 'base64url').length, 12);
  assert.equal(Buffer.from(tag!, 'base64url').length, 16);
  assert.equal(Buffer.from(ct!, 'base64url').length, 5);
  // Recompute with the documented derivation: the raw master key never seals directly.
  const key = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), 'svc secret sealing v1', 32));
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv!, 'base64url'), { authTagLength: 16 });
  d.setAAD(Buffer.from('svc:v1:row:1', 'utf8'));
  d.setAuthTag(Buffer.from(tag!, 'base64url'));
  assert.equal(Buffer.concat([d.update(Buffer.from(ct!, 'base64url')), d.final()]).toString('utf8'), 'hello');
  // An iv of another length, or an extra part, is malformed before any decryption.
  const longIv = Buffer.alloc(16, 1).toString('base64url');
  assert.throws(
    () => s.open([v, longIv, ct, tag].join('.'), 'row:1'),
    (e: unknown) => e instanceof SealError && /malformed/.test((e as Error).message),
  );
  assert.throws(
    () => s.open([v, iv, ct, tag, 'x'].join('.'), 'row:1'),
    (e: unknown) => e instanceof SealError && /version/.test((e as Error).message),
  );
  assert.throws(
    () => s.open(env, 'row:2'),
    (e: unknown) => e instanceof SealError && /authentication/.test((e as Error).message),
  );
  assert.equal(s.open(s.seal('', 'e'), 'e'), '');
  // A short tag is refused as malformed before GCM sees it (GCM would accept a truncated tag).
  const short = Buffer.from(tag!, 'base64url').subarray(0, 12).toString('base64url');
  assert.throws(
    () => s.open([v, iv, ct, short].join('.'), 'row:1'),
    (e: unknown) => e instanceof SealError && /malformed/.test((e as Error).message),
  );
});

test('sealer: the keyed digest is an HMAC under a per-purpose derived key', () => {
  const s = createSealer(KEY);
  const k = (purpose: string) =>
    Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), `svc keyed digest v1:${purpose}`, 32));
  assert.equal(
    s.digest('recovery', 'abc'),
    createHmac('sha256', k('recovery')).update('abc', 'utf8').digest('hex'),
  );
  assert.equal(s.digest('recovery', 'abc'), s.digest('recovery', 'abc'));
  assert.notEqual(s.digest('recovery', 'abc'), s.digest('other', 'abc'));
  assert.notEqual(s.digest('recovery', 'abc'), s.digest('recovery', 'abd'));
  assert.notEqual(createSealer(Buffer.alloc(32, 8)).digest('recovery', 'abc'), s.digest('recovery', 'abc'));
});

test('random: ids encode the time in Crockford base32, tokens and hashes have their sizes', () => {
  assert.equal(newId(0).slice(0, 10), '0000000000');
  assert.equal(newId(1).slice(0, 10), '0000000001');
  assert.equal(newId(32).slice(0, 10), '0000000010');
  assert.equal(newId(31).slice(0, 10), '000000000z');
  assert.equal(newId(32 ** 2 * 18 + 31).slice(0, 10), '0000000j0z');
  assert.equal(newId(2 ** 48 - 1).slice(0, 10), '7zzzzzzzzz');
  for (let i = 0; i < 50; i++) assert.match(newId(), ID_PATTERN);
  const id = newId();
  for (const bad of [`x${id}`, `${id}x`, id.slice(1), id.toUpperCase()])
    assert.equal(ID_PATTERN.test(bad), false, bad);
  assert.equal(newId().length, 26);
  const tails = new Set(Array.from({ length: 200 }, () => newId(5).slice(10)));
  assert.equal(tails.size, 200, 'the 80 random bits differ');
  // Every Crockford digit shows up in the random part, and none outside the alphabet.
  const seen = new Set([...Array.from({ length: 400 }, () => newId(5).slice(10)).join('')]);
  assert.equal(seen.size, 32);
  assert.equal(randomToken().length, 43);
  assert.equal(randomToken(24).length, 32);
  assert.match(randomToken(), /^[A-Za-z0-9_-]+$/);
  assert.notEqual(randomToken(), randomToken());
  assert.equal(sha256Hex('abc'), createHash('sha256').update('abc').digest('hex'));
  assert.equal(
    sha256Hex(Buffer.from('abc')),
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  );
  assert.equal(safeEqual('', ''), true);
  assert.equal(safeEqual('a', ''), false);
  assert.equal(safeEqual('', 'a'), false);
  assert.equal(safeEqual('abcd', 'abc'), false);
});

test('sealed rows: found in each place that holds them; a key that cannot open them is named per place', async () => {
  const env = await memoryEnv();
  const db = env.db;
  const good = createSealer(Buffer.alloc(32, 0xbb)); // memoryEnv's SVC_MASTER_KEY: 'b' * 64 in hex
  const wrong = createSealer(Buffer.alloc(32, 9));
  // memoryEnv seals its signing key at boot.
  const sk = await db
    .selectFrom('settings')
    .select('value')
    .where('key', '=', SIGNING_KEY_SETTING)
    .executeTakeFirstOrThrow();
  assert.ok(sk.value.startsWith('v1.'));
  assert.equal(await hasSealedData(db), true);
  assert.deepEqual(await unopenableSealedData(db, good), []);
  assert.deepEqual(await unopenableSealedData(db, wrong), ['the signing key']);
  // A signing key stored in clear is not sealed data.
  await db
    .updateTable('settings')
    .set({ value: 'clear-key' })
    .where('key', '=', SIGNING_KEY_SETTING)
    .execute();
  assert.equal(await hasSealedData(db), false);
  assert.deepEqual(await unopenableSealedData(db, wrong), []);

  const now = new Date().toISOString();
  const user = {
    id: 'u1',
    username: 'op',
    password_hash: 'x',
    totp_enabled: 1,
    totp_secret: good.seal('s', totpBinding('u1')),
    totp_pending: null,
    totp_last_step: null,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('users').values(user).execute();
  await db
    .insertInto('users')
    .values({
      ...user,
      id: 'u2',
      username: 'op2',
      totp_secret: null,
      totp_pending: good.seal('p', totpBinding('u2') + ':pending'),
    })
    .execute();
  await db
    .insertInto('apps')
    .values({
      id: 'a1',
      name: 'a1',
      source: '{}',
      status: 'stopped',
      created_at: now,
      updated_at: now,
      deleting_at: null,
    })
    .execute();
  await db
    .insertInto('app_env')
    .values({ app_id: 'a1', key: 'K', secret: 1, sealed: good.seal('v', envBinding('a1', 'K')) })
    .execute();
  await db
    .insertInto('app_webhooks')
    .values({ app_id: 'a1', secret_sealed: good.seal('w', webhookBinding('a1')), created_at: now })
    .execute();
  await db
    .insertInto('app_ssh_keys')
    .values({
      app_id: 'a1',
      public_key: 'k',
      fingerprint: 'f',
      private_sealed: good.seal('pk', keyBinding('a1')),
      created_at: now,
    })
    .execute();
  assert.equal(await hasSealedData(db), true);
  assert.deepEqual(await unopenableSealedData(db, good), []);
  assert.deepEqual(await unopenableSealedData(db, wrong), [
    'TOTP secrets',
    'pending TOTP secrets',
    'environment variables',
    'webhook secrets',
    'deploy keys',
  ]);
  // Each place is opened under its own binding: a value moved to another place does not open.
  await db
    .updateTable('app_webhooks')
    .set({ secret_sealed: good.seal('w', keyBinding('a1')) })
    .execute();
  assert.deepEqual(await unopenableSealedData(db, good), ['webhook secrets']);
  await db
    .updateTable('settings')
    .set({ value: good.seal('k', SIGNING_KEY_BINDING) })
    .where('key', '=', SIGNING_KEY_SETTING)
    .execute();
  await db
    .updateTable('users')
    .set({ totp_pending: good.seal('p', totpBinding('u2')) })
    .where('id', '=', 'u2')
    .execute();
  assert.deepEqual(await unopenableSealedData(db, good), ['pending TOTP secrets', 'webhook secrets']);
  await db.deleteFrom('users').execute();
  await db.deleteFrom('app_env').execute();
  await db.deleteFrom('app_webhooks').execute();
  await db.deleteFrom('app_ssh_keys').execute();
  assert.deepEqual(await unopenableSealedData(db, wrong), ['the signing key']);
  await db.deleteFrom('settings').where('key', '=', SIGNING_KEY_SETTING).execute();
  assert.equal(await hasSealedData(db), false);
  await db.destroy();
});
