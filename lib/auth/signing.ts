// Short-lived signed values (the `svc_pre` TOTP-pending token) use jose with an instance key.
import type * as Jose from 'jose';
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { readSetting, replaceSetting, settingOnce } from '../db/settings-store.js';

// The instance key signs `svc_pre` and derives CSRF tokens: whoever reads it from a copy of the
// database could forge both, so it is sealed under the master key like every other secret.
export const SIGNING_KEY_SETTING = 'signing_key';
export const SIGNING_KEY_BINDING = 'settings:signing_key';

/** Sealed envelopes start with their version; the key stored in clear by older builds does not. */
export const isSealed = (value: string) => value.startsWith('v1.');

/**
 * The instance key, created on first use. A key stored in clear (older builds, or a boot without
 * a master key) is sealed in place as soon as a master key is available.
 */
export async function loadSigningKey(db: Db, sealer: Sealer): Promise<Uint8Array> {
  let stored = await readSetting(db, SIGNING_KEY_SETTING);
  if (stored === null) {
    const fresh = randomBytes(32).toString('base64url');
    const value = sealer.available ? sealer.seal(fresh, SIGNING_KEY_BINDING) : fresh;
    stored = await settingOnce(db, SIGNING_KEY_SETTING, value);
  }
  if (isSealed(stored)) return Buffer.from(sealer.open(stored, SIGNING_KEY_BINDING), 'base64url');
  if (sealer.available) {
    // Conditional: a concurrent boot that sealed it first wins, and both end with the same key.
    await replaceSetting(db, SIGNING_KEY_SETTING, stored, sealer.seal(stored, SIGNING_KEY_BINDING));
  }
  return Buffer.from(stored, 'base64url');
}

export const PRE_AUTH_SECONDS = 300;

// Loaded on first use (only logins with TOTP need it): keeps start-up lean.
let jose: Promise<typeof Jose> | undefined;
const lib = () => (jose ??= import('jose'));

export async function signPreAuth(key: Uint8Array, userId: string, now = Date.now()): Promise<string> {
  const iat = Math.floor(now / 1000);
  const { SignJWT } = await lib();
  return new SignJWT({ purpose: 'totp' })
    .setProtectedHeader({ alg: 'HS256', typ: 'svc-pre' })
    .setSubject(userId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + PRE_AUTH_SECONDS)
    .setJti(randomBytes(12).toString('base64url'))
    .sign(key);
}

/** The user id the token was issued for, or null when it is forged, altered or expired. */
export async function verifyPreAuth(
  key: Uint8Array,
  token: string,
  now = Date.now(),
): Promise<string | null> {
  if (token.length > 2048) return null;
  const { jwtVerify } = await lib();
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      typ: 'svc-pre',
      currentDate: new Date(now),
    });
    if (payload.purpose !== 'totp' || typeof payload.sub !== 'string') return null;
    return payload.sub;
  } catch {
    return null;
  }
}
