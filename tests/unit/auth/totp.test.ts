import { test } from 'node:test';
import assert from 'node:assert/strict';
import { totpCode, checkTotp, newTotpSecret, newRecoveryCodes, RECOVERY_PATTERN } from '#lib/auth/totp.js';

// RFC 6238 Appendix B: ASCII seeds, 8 digits, T0 = 0, X = 30.
const seeds = {
  sha1: new TextEncoder().encode('12345678901234567890'),
  sha256: new TextEncoder().encode('12345678901234567890123456789012'),
  sha512: new TextEncoder().encode('1234567890123456789012345678901234567890123456789012345678901234'),
};
const vectors: Array<[number, string, string, string]> = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

for (const [time, sha1, sha256, sha512] of vectors) {
  test(`RFC 6238 vector at T=${time}`, async () => {
    assert.equal(await totpCode(seeds.sha1, { epoch: time, digits: 8, algorithm: 'sha1' }), sha1);
    assert.equal(await totpCode(seeds.sha256, { epoch: time, digits: 8, algorithm: 'sha256' }), sha256);
    assert.equal(await totpCode(seeds.sha512, { epoch: time, digits: 8, algorithm: 'sha512' }), sha512);
  });
}

test('a code is accepted one step either side, not two', async () => {
  const secret = await newTotpSecret();
  const now = 1_700_000_000_000;
  const at = (offsetSteps: number) => totpCode(secret, { epoch: Math.floor(now / 1000) + offsetSteps * 30 });
  assert.notEqual(await checkTotp(secret, await at(0), null, now), null);
  assert.notEqual(await checkTotp(secret, await at(-1), null, now), null);
  assert.notEqual(await checkTotp(secret, await at(1), null, now), null);
  assert.equal(await checkTotp(secret, await at(-2), null, now), null);
  assert.equal(await checkTotp(secret, await at(2), null, now), null);
});

test('a used time step (and any older one) is refused afterwards', async () => {
  const secret = await newTotpSecret();
  const now = 1_700_000_000_000;
  const code = await totpCode(secret, { epoch: now / 1000 });
  const step = await checkTotp(secret, code, null, now);
  assert.ok(step !== null);
  assert.equal(await checkTotp(secret, code, step, now), null);
  const previous = await totpCode(secret, { epoch: now / 1000 - 30 });
  assert.equal(await checkTotp(secret, previous, step, now), null);
});

test('codes of the wrong shape are refused without work', async () => {
  const secret = await newTotpSecret();
  for (const c of ['', '12345', '1234567', 'abcdef', '12 345'])
    assert.equal(await checkTotp(secret, c, null), null);
});

test('ten distinct recovery codes', () => {
  const codes = newRecoveryCodes();
  assert.equal(codes.length, 10);
  assert.equal(new Set(codes).size, 10);
  for (const c of codes) assert.match(c, RECOVERY_PATTERN);
});
