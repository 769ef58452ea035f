// Backup artifacts: chunked AES-256-GCM, streamed (a chunk in memory at a time).
//   header v2: "SVCBAK02" | salt (32) | binding length (2, BE) | binding   (written since artifacts are bound)
//   header v1: "SVCBAK01" | salt (32)                                      (read only)
//   record:    final (1) | length (4, BE) | ciphertext | tag (16)
// The file key is HKDF(master key, salt). Each record's IV is its index; the whole header, the
// index, the final flag and the length are its associated data, so reordering, truncation (no
// final record), appending after the final record, or any flipped bit fails authentication.
// The binding names the app, the backup config and the run the artifact was written for: being in
// the header, it is authenticated by every record's tag, so an artifact (same master key) of
// another app or run is refused however a destination hands it over. An instance backup's binding
// names the instance and the run instead (`instance=<id>;run=<id>`), so neither kind passes as the other.
// A v1 artifact carries no binding. It is still read so that backups taken before binding stay
// restorable; what binds it to its run is the sha256 the run recorded, which is always checked on
// the very copy that is used (verified.ts). A new run records the sha256 of a v2 artifact, so a v1
// artifact can never pass as one.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

const MAGIC_V1 = Buffer.from('SVCBAK01');
const MAGIC_V2 = Buffer.from('SVCBAK02');
const MAGIC = MAGIC_V1.length;
const SALT = 32;
const BINDING_LEN = 2;
const MAX_BINDING = 512;
const TAG = 16;
export const CHUNK = 64 * 1024;
const RECORD_HEAD = 5;

export class ArtifactAuthError extends Error {}
/** The artifact authenticates, but for another app, config or run than the one it is used for. */
export class ArtifactBindingError extends ArtifactAuthError {}

/** What an artifact belongs to: a backup of an app, or a backup of the whole instance. */
export type AnyBinding = ArtifactBinding | InstanceBinding;
export interface ArtifactBinding {
  app_id: string;
  backup_id: string;
  run_id: string;
}
export interface InstanceBinding {
  instance_id: string;
  run_id: string;
}
/**
 * Checks the binding an artifact carries (null: a v1 artifact, which carries none) and throws
 * ArtifactBindingError to refuse it; for readers that learn what to expect from the artifact itself.
 */
export type BindingCheck = (found: AnyBinding | null) => void;

const ID = /^[0-9a-z]{1,64}$/;
const isInstance = (b: AnyBinding): b is InstanceBinding => 'instance_id' in b;

export function bindingText(b: AnyBinding): Buffer {
  const ids = isInstance(b) ? [b.instance_id, b.run_id] : [b.app_id, b.backup_id, b.run_id];
  for (const v of ids) if (!ID.test(v)) throw new Error('bad artifact binding');
  return Buffer.from(
    isInstance(b)
      ? `instance=${b.instance_id};run=${b.run_id}`
      : `app=${b.app_id};backup=${b.backup_id};run=${b.run_id}`,
  );
}

function parseBinding(text: string): AnyBinding | null {
  const m = /^app=([0-9a-z]{1,64});backup=([0-9a-z]{1,64});run=([0-9a-z]{1,64})$/.exec(text);
  if (m) return { app_id: m[1]!, backup_id: m[2]!, run_id: m[3]! };
  const i = /^instance=([0-9a-z]{1,64});run=([0-9a-z]{1,64})$/.exec(text);
  return i ? { instance_id: i[1]!, run_id: i[2]! } : null;
}

/** The sentence for an artifact bound elsewhere; it names no other app's ids. */
function checkBinding(found: AnyBinding, expected: AnyBinding): void {
  let other: string | null = null;
  if (isInstance(found) || isInstance(expected)) {
    if (!isInstance(found)) other = 'an app backup';
    else if (!isInstance(expected)) other = 'an instance backup';
    else if (found.instance_id !== expected.instance_id) other = 'another instance';
    else if (found.run_id !== expected.run_id) other = 'another run of the instance backup';
  } else if (found.app_id !== expected.app_id) other = 'another app';
  else if (found.backup_id !== expected.backup_id) other = 'another backup configuration';
  else if (found.run_id !== expected.run_id) other = 'another run of this backup';
  if (other) throw new ArtifactBindingError(`the artifact belongs to ${other}, not to this run`);
}

function fileKey(master: Buffer, salt: Buffer, version: 1 | 2): Buffer {
  return Buffer.from(
    hkdfSync('sha256', master, salt, version === 1 ? 'svc backup artifact v1' : 'svc backup artifact v2', 32),
  );
}

function iv(index: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(Math.floor(index / 2 ** 32), 4);
  b.writeUInt32BE(index >>> 0, 8);
  return b;
}

function aad(header: Buffer, index: number, final: boolean, length: number): Buffer {
  const b = Buffer.alloc(header.length + 8 + 1 + 4);
  header.copy(b, 0);
  const at = header.length;
  b.writeUInt32BE(Math.floor(index / 2 ** 32), at);
  b.writeUInt32BE(index >>> 0, at + 4);
  b[at + 8] = final ? 1 : 0;
  b.writeUInt32BE(length, at + 9);
  return b;
}

export function encryptStream(master: Buffer, binding: AnyBinding): Transform {
  const salt = randomBytes(SALT);
  const bound = bindingText(binding);
  const len = Buffer.alloc(BINDING_LEN);
  len.writeUInt16BE(bound.length);
  const header = Buffer.concat([MAGIC_V2, salt, len, bound]);
  const key = fileKey(master, salt, 2);
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
    // A few records may wait here while the next stage writes (lib/backups/run.ts, STREAM_BUFFER).
    highWaterMark: 1024 * 1024,
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

/**
 * Authenticates and decrypts an artifact written for `expected`; a v1 artifact (no binding) is
 * read too, and its caller must have checked the run's sha256 on these very bytes.
 */
export function decryptStream(master: Buffer, expected: AnyBinding | BindingCheck): Transform {
  const check: BindingCheck =
    typeof expected === 'function'
      ? expected
      : (found) => {
          // Only an app backup was ever written without a binding.
          if (!found && isInstance(expected))
            throw new ArtifactBindingError('the artifact is not an instance backup');
          if (found) checkBinding(found, expected);
        };
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
          if (buf.length < MAGIC + SALT) return cb();
          const magic = buf.subarray(0, MAGIC);
          let size = MAGIC + SALT;
          if (magic.equals(MAGIC_V2)) {
            if (buf.length < size + BINDING_LEN) return cb();
            const n = buf.readUInt16BE(size);
            if (n > MAX_BINDING) throw new ArtifactAuthError('malformed header');
            size += BINDING_LEN + n;
            if (buf.length < size) return cb();
            const found = parseBinding(buf.subarray(MAGIC + SALT + BINDING_LEN, size).toString('latin1'));
            if (!found) throw new ArtifactAuthError('malformed header');
            check(found);
          } else if (!magic.equals(MAGIC_V1)) {
            throw new ArtifactAuthError('not a backup artifact (bad header)');
          } else {
            check(null);
          }
          header = Buffer.from(buf.subarray(0, size));
          key = fileKey(master, header.subarray(MAGIC, MAGIC + SALT), magic.equals(MAGIC_V2) ? 2 : 1);
          buf = buf.subarray(size);
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
      if (!done || buf.length)
        return cb(new ArtifactAuthError('the artifact is truncated (no final record)'));
      cb();
    },
  });
}
