// Backup artifacts: chunked AES-256-GCM, streamed (a chunk in memory at a time).
//   header: "SVCBAK01" | salt (32 bytes)         the file key is HKDF(master key, salt)
//   record: final (1) | length (4, BE) | ciphertext | tag (16)
// Each record's IV is its index; the header, the index, the final flag and the length are its
// associated data, so reordering, truncation (no final record), appending after the final
// record, or any flipped bit fails authentication.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

const MAGIC = Buffer.from('SVCBAK01');
const SALT = 32;
const HEADER = MAGIC.length + SALT;
const TAG = 16;
export const CHUNK = 64 * 1024;
const RECORD_HEAD = 5;

export class ArtifactAuthError extends Error {}

function fileKey(master: Buffer, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', master, salt, 'svc backup artifact v1', 32));
}

function iv(index: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(Math.floor(index / 2 ** 32), 4);
  b.writeUInt32BE(index >>> 0, 8);
  return b;
}

function aad(header: Buffer, index: number, final: boolean, length: number): Buffer {
  const b = Buffer.alloc(HEADER + 8 + 1 + 4);
  header.copy(b, 0);
  b.writeUInt32BE(Math.floor(index / 2 ** 32), HEADER);
  b.writeUInt32BE(index >>> 0, HEADER + 4);
  b[HEADER + 8] = final ? 1 : 0;
  b.writeUInt32BE(length, HEADER + 9);
  return b;
}

export function encryptStream(master: Buffer): Transform {
  const salt = randomBytes(SALT);
  const header = Buffer.concat([MAGIC, salt]);
  const key = fileKey(master, salt);
  let index = 0;
  let pending: Buffer[] = [];
  let pendingLen = 0;
  const seal = (self: Transform, plain: Buffer, final: boolean) => {
    const c = createCipheriv('aes-256-gcm', key, iv(index), { authTagLength: TAG });
    c.setAAD(aad(header, index, final, plain.length));
    const ct = Buffer.concat([c.update(plain), c.final()]);
    const head = Buffer.alloc(RECORD_HEAD);
    head[0] = final ? 1 : 0;
    head.writeUInt32BE(plain.length, 1);
    self.push(Buffer.concat([head, ct, c.getAuthTag()]));
    index++;
  };
  return new Transform({
    construct(cb) {
      this.push(header);
      cb();
    },
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      pending.push(chunk);
      pendingLen += chunk.length;
      if (pendingLen >= CHUNK) {
        let all = Buffer.concat(pending);
        while (all.length >= CHUNK) {
          seal(this, all.subarray(0, CHUNK), false);
          all = all.subarray(CHUNK);
        }
        pending = all.length ? [all] : [];
        pendingLen = all.length;
      }
      cb();
    },
    flush(cb: TransformCallback) {
      seal(this, Buffer.concat(pending), true);
      cb();
    },
  });
}

export function decryptStream(master: Buffer): Transform {
  let buf: Buffer = Buffer.alloc(0);
  let header: Buffer | null = null;
  let key: Buffer | null = null;
  let index = 0;
  let done = false;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      try {
        if (!header) {
          if (buf.length < HEADER) return cb();
          header = Buffer.from(buf.subarray(0, HEADER));
          if (!header.subarray(0, MAGIC.length).equals(MAGIC)) throw new ArtifactAuthError('not a backup artifact (bad header)');
          key = fileKey(master, header.subarray(MAGIC.length));
          buf = buf.subarray(HEADER);
        }
        while (buf.length >= RECORD_HEAD) {
          if (done) throw new ArtifactAuthError('data after the final record');
          const final = buf[0] === 1;
          if (buf[0]! > 1) throw new ArtifactAuthError('malformed record');
          const len = buf.readUInt32BE(1);
          if (len > CHUNK) throw new ArtifactAuthError('malformed record length');
          const total = RECORD_HEAD + len + TAG;
          if (buf.length < total) break;
          const d = createDecipheriv('aes-256-gcm', key!, iv(index), { authTagLength: TAG });
          d.setAAD(aad(header, index, final, len));
          d.setAuthTag(buf.subarray(RECORD_HEAD + len, total));
          let plain: Buffer;
          try {
            plain = Buffer.concat([d.update(buf.subarray(RECORD_HEAD, RECORD_HEAD + len)), d.final()]);
          } catch {
            throw new ArtifactAuthError(`record ${index} failed its authentication tag`);
          }
          this.push(plain);
          index++;
          done = final;
          buf = buf.subarray(total);
        }
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    flush(cb: TransformCallback) {
      if (!done || buf.length) return cb(new ArtifactAuthError('the artifact is truncated (no final record)'));
      cb();
    },
  });
}
