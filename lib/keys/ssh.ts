// Per-app ed25519 deploy keys, made with node:crypto and written in OpenSSH's own formats
// (PROTOCOL.key for the private key, RFC 8709 wire encoding for the public key), so no
// ssh-keygen process is needed to make them and `ssh -i` reads them as they are.
import { createHash, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';

export interface DeployKey {
  /** `ssh-ed25519 AAAA... comment`, one line, for the forge's deploy key form. */
  publicKey: string;
  /** `-----BEGIN OPENSSH PRIVATE KEY-----` block, unencrypted (it is sealed at rest instead). */
  privateKey: string;
  /** `SHA256:<base64 without padding>`, as `ssh-keygen -lf` prints it. */
  fingerprint: string;
}

const KEY_TYPE = 'ssh-ed25519';
const COMMENT = /^[\x21-\x7e][\x20-\x7e]{0,199}$/;

export function generateDeployKey(comment: string): DeployKey {
  // Printable ASCII only: the comment ends up on a one-line public key and in the private key.
  if (!COMMENT.test(comment) || comment.endsWith(' '))
    throw new TypeError('key comment must be 1-200 printable ASCII characters');
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
  if (pub.length !== 32 || seed.length !== 32) throw new Error('unexpected ed25519 key size');
  const blob = publicBlob(pub);
  return {
    publicKey: `${KEY_TYPE} ${blob.toString('base64')} ${comment}`,
    privateKey: opensshPrivateKey(pub, seed, comment),
    fingerprint: fingerprintOfBlob(blob),
  };
}

/** Fingerprint of a stored `ssh-ed25519 AAAA... [comment]` line (for GET ssh-key). */
export function fingerprintOf(publicKeyLine: string): string {
  const [type, b64] = publicKeyLine.trim().split(/\s+/);
  if (type !== KEY_TYPE || !b64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64))
    throw new TypeError('not an ssh-ed25519 public key line');
  const blob = Buffer.from(b64, 'base64');
  // Round-trip through node:crypto so a malformed blob is refused rather than fingerprinted.
  const pub = blob.subarray(blob.length - 32);
  if (!blob.equals(publicBlob(pub))) throw new TypeError('malformed ssh-ed25519 public key');
  createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: pub.toString('base64url') }, format: 'jwk' });
  return fingerprintOfBlob(blob);
}

function fingerprintOfBlob(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

function publicBlob(pub: Buffer): Buffer {
  return Buffer.concat([sshString(KEY_TYPE), sshString(pub)]);
}

function sshString(v: string | Buffer): Buffer {
  const data = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  return Buffer.concat([len, data]);
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/**
 * "openssh-key-v1\0", cipher "none", kdf "none", empty kdf options, one key, its public blob,
 * then the private section: two equal check integers, the key type, the public key, the 64-byte
 * private key (seed followed by public key, as OpenSSH stores ed25519), the comment, and padding
 * 1, 2, 3... up to a multiple of 8 (the block size of the "none" cipher).
 */
function opensshPrivateKey(pub: Buffer, seed: Buffer, comment: string): string {
  const check = randomBytes(4).readUInt32BE(0);
  let priv = Buffer.concat([
    uint32(check),
    uint32(check),
    sshString(KEY_TYPE),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  const pad = (8 - (priv.length % 8)) % 8;
  priv = Buffer.concat([priv, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0', 'latin1'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(publicBlob(pub)),
    sshString(priv),
  ]);
  const b64 = body
    .toString('base64')
    .match(/.{1,70}/g)!
    .join('\n');
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}\n-----END OPENSSH PRIVATE KEY-----\n`;
}
