// AES-256-GCM sealing of secrets at rest. Envelope: v1.<iv>.<ciphertext>.<tag> (base64url).
// The owning row is bound in as associated data, so a ciphertext copied to another row fails to open.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { HttpError } from '../http/errors.js';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    sealer: Sealer;
  }
}

export interface Sealer {
  readonly available: boolean;
  seal(plaintext: string, binding: string): string;
  open(envelope: string, binding: string): string;
  /**
   * A keyed digest (HMAC-SHA-256 under a key derived from the master key for `purpose`): for
   * values that are checked, never read back, and must be worthless to whoever copies the database.
   */
  digest(purpose: string, value: string): string;
}

export class SealError extends Error {}

/** Throws the 503 that names the missing master key when sealing is not possible. */
export function requireSealer(sealer: Sealer): void {
  if (!sealer.available) sealer.seal('', '');
}

export function createSealer(masterKey: Buffer | null): Sealer {
  if (!masterKey) {
    const missing = () => {
      throw new HttpError(
        'service_unavailable',
        'SVC_MASTER_KEY is not set, so secrets cannot be sealed or opened',
      );
    };
    return { available: false, seal: missing, open: missing, digest: missing };
  }
  if (masterKey.length !== 32) throw new Error('master key must be 32 bytes');
  // A derived key keeps the master key usable for other purposes without key reuse across them.
  const key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'svc secret sealing v1', 32));
  const digestKeys = new Map<string, Buffer>();
  const digestKey = (purpose: string) => {
    let k = digestKeys.get(purpose);
    if (!k)
      digestKeys.set(
        purpose,
        (k = Buffer.from(
          hkdfSync('sha256', masterKey, Buffer.alloc(0), `svc keyed digest v1:${purpose}`, 32),
        )),
      );
    return k;
  };
  return {
    available: true,
    digest: (purpose, value) => createHmac('sha256', digestKey(purpose)).update(value, 'utf8').digest('hex'),
    seal(plaintext, binding) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(binding));
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [VERSION, iv.toString('base64url'), ct.toString('base64url'), tag.toString('base64url')].join(
        '.',
      );
    },
    open(envelope, binding) {
      const parts = envelope.split('.');
      if (parts.length !== 4 || parts[0] !== VERSION) throw new SealError('unknown envelope version');
      const iv = Buffer.from(parts[1]!, 'base64url');
      const ct = Buffer.from(parts[2]!, 'base64url');
      const tag = Buffer.from(parts[3]!, 'base64url');
      // A short tag would weaken GCM's integrity guarantee to a guessable few bytes: refuse it.
      if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new SealError('malformed envelope');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(binding));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
      } catch {
        throw new SealError('sealed value failed authentication');
      }
    },
  };
}

function aad(binding: string): Buffer {
  return Buffer.from(`svc:${VERSION}:${binding}`, 'utf8');
}
