// scrypt at OWASP's recommended cost (N=2^17, r=8, p=1). The parameters travel with each hash,
// so raising the cost later keeps old hashes verifiable.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { Semaphore } from '../util/semaphore.js';

const KEY_BYTES = 32;
// Each hash holds ~128*N*r bytes (128 MiB at 2^17): two at a time keeps memory bounded on small hosts.
const hashing = new Semaphore(2);

function scryptAsync(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string, logN = 17): Promise<string> {
  const salt = randomBytes(16);
  const key = await hashing.run(() => scryptAsync(password, salt, logN, 8, 1));
  return `scrypt$${logN}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (!(logN >= 10 && logN <= 20 && r >= 1 && r <= 32 && p >= 1 && p <= 16)) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  const key = await hashing.run(() => scryptAsync(password, salt, logN, r, p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

const dummies = new Map<number, Promise<string>>();

/** A hash to verify against when the user does not exist, so both paths cost the same. */
export function dummyHash(logN: number): Promise<string> {
  let h = dummies.get(logN);
  if (!h) dummies.set(logN, (h = hashPassword(randomBytes(16).toString('hex'), logN)));
  return h;
}
