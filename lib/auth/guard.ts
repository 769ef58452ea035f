// Login throttling that an attacker cannot turn against the operator.
//
// Per address: the runtime's rate limit on the route (SVC_AUTH_RATE_LIMIT a minute).
// Per account: failed passwords for one username (existing or not, so the limit says nothing
// about which names exist) are counted; past SVC_AUTH_ACCOUNT_LIMIT in 15 minutes the account
// answers 429 without hashing, which also makes a flood aimed at it cheap.
// The lock does not apply to a known device: a browser that completed a login for this account
// before carries a signed `svc_device` cookie (HttpOnly, for /api/auth only), and a live session
// of the account counts too. Their attempts bypass the account lock and hash in the priority lane
// (see HashGate), so the real operator logs in during a flood as fast as on an idle server. A
// known device that keeps failing is demoted after a few failures and is then a stranger again.
import { createHmac, randomBytes } from 'node:crypto';
import { RateLimiter } from './ratelimit.js';
import { HttpError } from '../http/errors.js';
import { safeEqual } from '../crypto/random.js';

export const DEVICE_COOKIE = 'svc_device';
export const DEVICE_MAX_AGE = 180 * 86400;
const ACCOUNT_WINDOW_MS = 15 * 60_000;
const DEVICE_FAILURES = 5;

export interface Device {
  userId: string;
  id: string;
}

function mac(signingKey: Uint8Array, userId: string, id: string): string {
  return createHmac('sha256', signingKey).update(`device:${userId}.${id}`).digest('base64url');
}

/** A new device cookie value for a browser that just completed a login. */
export function issueDevice(signingKey: Uint8Array, userId: string): string {
  const id = randomBytes(16).toString('base64url');
  return `${userId}.${id}.${mac(signingKey, userId, id)}`;
}

/** The device a cookie names, when it is ours and untampered. */
export function readDevice(signingKey: Uint8Array, value: string | undefined): Device | null {
  if (!value || value.length > 256) return null;
  const parts = value.split('.');
  if (parts.length !== 3) return null;
  const [userId, id, sig] = parts as [string, string, string];
  return safeEqual(sig, mac(signingKey, userId, id)) ? { userId, id } : null;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Per-account login throttling that known devices bypass. */
    loginGuard: LoginGuard;
  }
}

export class LoginGuard {
  private readonly accounts: RateLimiter;
  private readonly devices = new RateLimiter(DEVICE_FAILURES, ACCOUNT_WINDOW_MS);

  constructor(accountFailures: number) {
    this.accounts = new RateLimiter(accountFailures, ACCOUNT_WINDOW_MS);
  }

  private static account(username: string): string {
    return username.normalize('NFC').toLowerCase();
  }

  /** Whether a known device has not used up its own failures. */
  deviceInGoodStanding(device: Device, now: number): boolean {
    return this.devices.blocked(device.id, now) === null;
  }

  /** Before any hashing: a stranger's attempt on a locked account is refused at once. */
  admit(username: string, known: boolean, now: number): void {
    if (known) return;
    const wait = this.accounts.blocked(LoginGuard.account(username), now);
    if (wait !== null) {
      throw new HttpError(
        'rate_limited',
        'Too many failed sign-ins for this account; try again later',
        undefined,
        { 'retry-after': String(wait) },
      );
    }
  }

  /** Counts a wrong password; true when this failure just locked the account for strangers. */
  failed(username: string, device: Device | null, now: number): boolean {
    if (device) this.devices.hit(device.id, now);
    const r = this.accounts.hit(LoginGuard.account(username), now);
    return r.ok && this.accounts.blocked(LoginGuard.account(username), now) !== null;
  }
}
