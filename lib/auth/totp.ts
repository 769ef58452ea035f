// TOTP (RFC 6238) through otplib: ±1 step of tolerance, and a code's time step may be used once.
import type * as Otplib from 'otplib';
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { invalidateCredentials } from './cache.js';
import {
  advanceTotpStep,
  burnRecoveryCode,
  recoveryRowsWithout,
  rehashRecoveryRow,
  replaceRecoveryRows,
  secondFactorRow,
  turnOffTotp,
  turnOnTotp,
} from './totp-store.js';

const PERIOD = 30;

// Loaded on first use: most requests never touch TOTP, and start-up time and memory count.
let otplib: Promise<typeof Otplib> | undefined;
const lib = () => (otplib ??= import('otplib'));
export const ISSUER = 'svc';

export const totpBinding = (userId: string) => `user:${userId}:totp`;

export async function newTotpSecret(): Promise<string> {
  return (await lib()).generateSecret();
}

export async function otpauthUrl(username: string, secret: string): Promise<string> {
  return (await lib()).generateURI({ issuer: ISSUER, label: username, secret });
}

export interface TotpOptions {
  epoch?: number;
  digits?: 6 | 7 | 8;
  algorithm?: 'sha1' | 'sha256' | 'sha512';
}

export async function totpCode(secret: string | Uint8Array, o: TotpOptions = {}): Promise<string> {
  const { generate } = await lib();
  return generate({
    secret: secret as string,
    epoch: o.epoch ?? Math.floor(Date.now() / 1000),
    digits: o.digits ?? 6,
    algorithm: o.algorithm ?? 'sha1',
    period: PERIOD,
  } as Parameters<typeof Otplib.generate>[0]);
}

/** The matched time step, or null. `afterStep` refuses the last used step and anything older. */
export async function checkTotp(
  secret: string,
  code: string,
  afterStep: number | null,
  now = Date.now(),
): Promise<number | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const { verify } = await lib();
  try {
    const r = await verify({
      secret,
      token: code,
      epoch: Math.floor(now / 1000),
      epochTolerance: PERIOD,
      period: PERIOD,
      ...(afterStep !== null ? { afterTimeStep: afterStep } : {}),
    } as Parameters<typeof Otplib.verify>[0]);
    return r.valid && 'timeStep' in r ? (r.timeStep as number) : null;
  } catch {
    return null;
  }
}

const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

export function newRecoveryCodes(n = 10): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const bytes = randomBytes(10);
    let s = '';
    for (const b of bytes) s += RECOVERY_ALPHABET[b % RECOVERY_ALPHABET.length];
    out.push(`${s.slice(0, 5)}-${s.slice(5)}`);
  }
  return out;
}

export const RECOVERY_PATTERN = /^[a-z2-9]{5}-?[a-z2-9]{5}$/;

// A bare SHA-256 of a 50-bit code is brute-forced offline from a copy of the database; keyed by
// the master key, the stored value is worthless without it. The keyed digest is taken over the
// old bare hash, so codes stored by older builds are upgraded in place (rehashRecoveryCodes) and
// keep working: nobody has to print new ones.
const RECOVERY_PREFIX = 'hmac1:';

function bareRecoveryHash(code: string): string {
  return createHash('sha256')
    .update('recovery:' + code.toLowerCase().replace('-', ''))
    .digest('hex');
}

function keyedRecoveryHash(sealer: Sealer, bare: string): string {
  return RECOVERY_PREFIX + sealer.digest('recovery-code', bare);
}

const recoveryHash = (sealer: Sealer, code: string) => keyedRecoveryHash(sealer, bareRecoveryHash(code));

/** Boot: re-keys codes stored as a bare SHA-256 by older builds. Returns how many were upgraded. */
export async function rehashRecoveryCodes(db: Db, sealer: Sealer): Promise<number> {
  if (!sealer.available) return 0;
  const rows = await recoveryRowsWithout(db, RECOVERY_PREFIX);
  for (const r of rows)
    await rehashRecoveryRow(db, r.id, r.code_hash, keyedRecoveryHash(sealer, r.code_hash));
  return rows.length;
}

/** Enables TOTP with the pending secret once a code proves the authenticator has it. */
export async function enableTotp(
  db: Db,
  sealer: Sealer,
  userId: string,
  pendingSealed: string,
  code: string,
  now = Date.now(),
): Promise<string[] | null> {
  const secret = sealer.open(pendingSealed, totpBinding(userId) + ':pending');
  const step = await checkTotp(secret, code, null, now);
  if (step === null) return null;
  const codes = newRecoveryCodes();
  await turnOnTotp(db, userId, {
    sealedSecret: sealer.seal(secret, totpBinding(userId)),
    step,
    at: nowIso(now),
    codeHashes: codes.map((c) => recoveryHash(sealer, c)),
  });
  invalidateCredentials();
  return codes;
}

/**
 * A fresh set of recovery codes for a user with TOTP enabled, in one transaction with the check:
 * the old codes stop working at once. Null when TOTP is not enabled (there is nothing they recover).
 */
export async function replaceRecoveryCodes(db: Db, sealer: Sealer, userId: string): Promise<string[] | null> {
  const codes = newRecoveryCodes();
  const done = await replaceRecoveryRows(
    db,
    userId,
    codes.map((c) => recoveryHash(sealer, c)),
  );
  return done ? codes : null;
}

/**
 * Checks a TOTP code (or a single-use recovery code) for a user with TOTP enabled and burns it.
 * The step update is conditional, so two requests racing with one code cannot both pass.
 */
export async function consumeSecondFactor(
  db: Db,
  sealer: Sealer,
  userId: string,
  code: string,
  now = Date.now(),
): Promise<boolean> {
  const user = await secondFactorRow(db, userId);
  if (!user || user.totp_enabled !== 1 || !user.totp_secret) return false;
  const trimmed = code.trim();
  if (RECOVERY_PATTERN.test(trimmed.toLowerCase())) {
    return burnRecoveryCode(db, userId, recoveryHash(sealer, trimmed), nowIso(now));
  }
  const secret = sealer.open(user.totp_secret, totpBinding(userId));
  const step = await checkTotp(secret, trimmed, user.totp_last_step, now);
  if (step === null) return false;
  return advanceTotpStep(db, userId, user.totp_last_step, step);
}

export async function disableTotp(db: Db, userId: string, now = Date.now()): Promise<void> {
  await turnOffTotp(db, userId, nowIso(now));
  invalidateCredentials();
}
