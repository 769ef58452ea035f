// Short-lived signed values (the `svc_pre` TOTP-pending token) use jose with an instance key.
import type * as Jose from 'jose';
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/index.js';

export async function loadSigningKey(db: Db): Promise<Uint8Array> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', 'signing_key').executeTakeFirst();
  if (row) return Buffer.from(row.value, 'base64url');
  const key = randomBytes(32);
  await db.insertInto('settings').values({ key: 'signing_key', value: key.toString('base64url') }).onConflict((c) => c.doNothing()).execute();
  const again = await db.selectFrom('settings').select('value').where('key', '=', 'signing_key').executeTakeFirstOrThrow();
  return Buffer.from(again.value, 'base64url');
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
export async function verifyPreAuth(key: Uint8Array, token: string, now = Date.now()): Promise<string | null> {
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
