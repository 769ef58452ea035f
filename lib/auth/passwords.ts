// scrypt at OWASP's recommended cost (N=2^17, r=8, p=1). The parameters travel with each hash,
// so raising the cost later keeps old hashes verifiable.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { HttpError } from '../http/errors.js';

const KEY_BYTES = 32;

/**
 * Who is asking for a hash. `priority`: a caller already known to the operator's account (a
 * device that logged in before, a live session, a step-up); `normal`: anyone else.
 */
export type HashLane = 'normal' | 'priority';

export interface HashGateOptions {
  /** Hashes running at once: each holds ~128*N*r bytes (128 MiB at 2^17). */
  slots: number;
  /** Slots only the priority lane may use, so a flood of strangers never delays a known operator. */
  reserved: number;
  /** Waiting hashes per lane; one more is refused with 429 at once instead of piling up. */
  maxWaiting: Record<HashLane, number>;
}

/**
 * Bounds password hashing: a fixed number of hashes at a time, a short queue per lane, and a
 * refusal (429 with Retry-After) beyond it. An unbounded queue let 400 requests from 50 addresses
 * delay an operator's login by 85 s; here a stranger waits at most a few hashes or is told to come
 * back, and the operator's own devices have a slot strangers cannot take.
 */
export class HashGate {
  private active = 0;
  private normalActive = 0;
  private readonly waiting: Record<HashLane, Array<() => void>> = { normal: [], priority: [] };
  /** Recent duration of one hash (ms), for Retry-After. */
  private typicalMs = 250;

  constructor(private readonly o: HashGateOptions) {}

  private canStart(lane: HashLane): boolean {
    if (this.active >= this.o.slots) return false;
    return lane === 'priority' || this.normalActive < this.o.slots - this.o.reserved;
  }

  async run<T>(lane: HashLane, job: () => Promise<T>): Promise<T> {
    const queue = this.waiting[lane];
    if (queue.length === 0 && this.canStart(lane)) this.take(lane);
    else {
      if (queue.length >= this.o.maxWaiting[lane]) {
        const parallel = lane === 'priority' ? this.o.slots : Math.max(1, this.o.slots - this.o.reserved);
        const seconds = Math.max(1, Math.ceil(((queue.length + 1) * this.typicalMs) / parallel / 1000));
        throw new HttpError(
          'rate_limited',
          'Too many sign-in attempts are being checked right now; try again shortly',
          undefined,
          { 'retry-after': String(seconds) },
        );
      }
      // wake() takes the slot on our behalf before resolving.
      await new Promise<void>((resolve) => queue.push(resolve));
    }
    const started = performance.now();
    try {
      return await job();
    } finally {
      this.typicalMs = this.typicalMs * 0.8 + (performance.now() - started) * 0.2;
      this.active--;
      if (lane === 'normal') this.normalActive--;
      this.wake();
    }
  }

  private take(lane: HashLane): void {
    this.active++;
    if (lane === 'normal') this.normalActive++;
  }

  private wake(): void {
    // Priority first; a normal waiter only into a slot that is not reserved.
    for (const lane of ['priority', 'normal'] as const) {
      while (this.waiting[lane].length && this.canStart(lane)) {
        this.take(lane);
        this.waiting[lane].shift()!();
      }
    }
  }

  stats(): { active: number; waiting: Record<HashLane, number> } {
    return {
      active: this.active,
      waiting: { normal: this.waiting.normal.length, priority: this.waiting.priority.length },
    };
  }
}

/** One gate for the process: hashing memory and CPU are the process's, whatever env asks. */
export const hashing = new HashGate({ slots: 2, reserved: 1, maxWaiting: { normal: 4, priority: 8 } });

function scryptAsync(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    scrypt(
      password.normalize('NFC'),
      salt,
      KEY_BYTES,
      { N, r, p, maxmem: 256 * N * r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  );
}

export async function hashPassword(password: string, logN = 17, lane: HashLane = 'normal'): Promise<string> {
  const salt = randomBytes(16);
  const key = await hashing.run(lane, () => scryptAsync(password, salt, logN, 8, 1));
  return `scrypt$${logN}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(
  password: string,
  stored: string,
  lane: HashLane = 'normal',
): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (!(logN >= 10 && logN <= 20 && r >= 1 && r <= 32 && p >= 1 && p <= 16)) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  const key = await hashing.run(lane, () => scryptAsync(password, salt, logN, r, p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A stored-hash look-alike to verify against when the user does not exist, so both paths cost one
 * full scrypt. Nothing hashes to it (its key is random), and making one costs nothing up front.
 */
export function dummyHash(logN: number): string {
  return `scrypt$${logN}$8$1$${randomBytes(16).toString('base64url')}$${randomBytes(KEY_BYTES).toString('base64url')}`;
}
