// Backup artifacts without the engine: the binding of an artifact to its app, config and run,
// the v1 artifacts written before binding (still readable, pinned by the run's sha256), and the
// fetch-once copy that restore, download and verify use (lib/backups/verified.ts): one request to
// the destination, the checks on that copy, a private spool removed in every outcome.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  encryptStream,
  decryptStream,
  ArtifactAuthError,
  ArtifactBindingError,
  type ArtifactBinding,
} from '#lib/backups/crypto.js';
import { fetchVerified, spoolRoot, sweepSpool, type RunArtifact } from '#lib/backups/verified.js';
import { localStore } from '#lib/backups/destinations.js';
import type { ArtifactStore } from '#lib/backups/artifact.js';

const MASTER = Buffer.alloc(32, 9);
const id = (c: string) => c.repeat(26);
const A: ArtifactBinding = { app_id: id('a'), backup_id: id('b'), run_id: id('c') };

async function collect(src: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  await pipeline(src, new Writable({ write: (c, _e, cb) => (parts.push(c), cb()) }));
  return Buffer.concat(parts);
}

const encrypt = (plain: Buffer, b: ArtifactBinding) =>
  collect(Readable.from([plain]).pipe(encryptStream(MASTER, b)));
const decrypt = (bytes: Buffer, b: ArtifactBinding) =>
  collect(Readable.from([bytes]).pipe(decryptStream(MASTER, b)));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** An artifact as the format before binding wrote it: "SVCBAK01" | salt, one final record. */
function legacyArtifact(plain: Buffer): Buffer {
  const salt = randomBytes(32);
  const header = Buffer.concat([Buffer.from('SVCBAK01'), salt]);
  const key = Buffer.from(hkdfSync('sha256', MASTER, salt, 'svc backup artifact v1', 32));
  const aad = Buffer.alloc(header.length + 13);
  header.copy(aad);
  aad[header.length + 8] = 1;
  aad.writeUInt32BE(plain.length, header.length + 9);
  const c = createCipheriv('aes-256-gcm', key, Buffer.alloc(12), { authTagLength: 16 });
  c.setAAD(aad);
  const ct = Buffer.concat([c.update(plain), c.final()]);
  const head = Buffer.alloc(5);
  head[0] = 1;
  head.writeUInt32BE(plain.length, 1);
  return Buffer.concat([header, head, ct, c.getAuthTag()]);
}

/** A remote destination that answers each GET from `answers` in turn (the last one repeats). */
function remote(answers: Buffer[]): ArtifactStore & { gets: number } {
  const store = {
    gets: 0,
    async put() {},
    async remove() {},
    async get() {
      return Readable.from([answers[Math.min(store.gets++, answers.length - 1)]!]);
    },
  };
  return store;
}

const runOf = (b: ArtifactBinding, bytes: Buffer): RunArtifact => ({
  id: b.run_id,
  app_id: b.app_id,
  backup_id: b.backup_id,
  artifact: `${b.app_id}/${b.run_id}.svcbak`,
  sha256: sha(bytes),
});

function dataDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-artifact-'));
}

test('an artifact decrypts only for the app, config and run it was written for', async () => {
  const plain = randomBytes(200_000);
  const bytes = await encrypt(plain, A);
  assert.deepEqual(await decrypt(bytes, A), plain);
  const cases: Array<[ArtifactBinding, RegExp]> = [
    [{ ...A, app_id: id('x') }, /another app/],
    [{ ...A, backup_id: id('x') }, /another backup configuration/],
    [{ ...A, run_id: id('x') }, /another run/],
  ];
  for (const [other, why] of cases) {
    await assert.rejects(
      decrypt(bytes, other),
      (e: Error) => e instanceof ArtifactBindingError && why.test(e.message),
    );
  }
  // The binding is in the clear header but authenticated: rewriting it to the expected one
  // (same length) fails the records' tags.
  const forged = Buffer.from(bytes);
  const at = forged.indexOf(Buffer.from(`app=${A.app_id}`));
  forged.write(`app=${id('x')}`, at);
  await assert.rejects(
    decrypt(forged, { ...A, app_id: id('x') }),
    (e: Error) =>
      e instanceof ArtifactAuthError && !(e instanceof ArtifactBindingError) && /tag/.test(e.message),
  );
});

test('a v1 artifact (before binding) is still read, pinned by the sha256 its run recorded', async () => {
  const dir = dataDir();
  try {
    const plain = Buffer.from('legacy dump');
    const old = legacyArtifact(plain);
    assert.deepEqual(await decrypt(old, A), plain);
    const copy = await fetchVerified(remote([old]), runOf(A, old), MASTER, dir);
    assert.deepEqual(await collect(copy.plain()), plain);
    await copy.close();
    // Another v1 artifact (another app's, same master key) does not match this run's sha256.
    const foreign = legacyArtifact(Buffer.from('another app'));
    await assert.rejects(
      fetchVerified(remote([foreign]), runOf(A, old), MASTER, dir),
      /sha256 does not match/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fetch once: the checked copy is the used copy, however the destination answers a second request', async () => {
  const dir = dataDir();
  try {
    const mine = Buffer.from('this app and run');
    const B: ArtifactBinding = { app_id: id('d'), backup_id: id('e'), run_id: id('f') };
    const bytes = await encrypt(mine, A);
    const theirs = await encrypt(Buffer.from('another app'), B);
    const store = remote([bytes, theirs]);
    const copy = await fetchVerified(store, runOf(A, bytes), MASTER, dir);
    // Read twice (pg_restore --list, then the restore): one request to the destination.
    assert.deepEqual(await collect(copy.plain()), mine);
    assert.deepEqual(await collect(copy.plain()), mine);
    assert.equal(store.gets, 1);
    // The spool while in use: one private directory holding one private file.
    const spools = await readdir(spoolRoot(dir));
    assert.equal(spools.length, 1);
    assert.equal((await stat(spoolRoot(dir))).mode & 0o777, 0o700);
    assert.equal((await stat(join(spoolRoot(dir), spools[0]!))).mode & 0o777, 0o700);
    assert.equal((await stat(join(spoolRoot(dir), spools[0]!, 'artifact'))).mode & 0o777, 0o600);
    // A reader that stops early does not take the copy away from the next one.
    copy.plain().destroy();
    assert.deepEqual(await collect(copy.plain()), mine);
    await copy.close();
    await copy.close();
    assert.deepEqual(await readdir(spoolRoot(dir)), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("another app's or run's artifact is refused by its binding even where the sha256 was made to match", async () => {
  const dir = dataDir();
  try {
    const B: ArtifactBinding = { ...A, app_id: id('d') };
    const C: ArtifactBinding = { ...A, run_id: id('g') };
    for (const [other, why] of [
      [B, /another app/],
      [C, /another run/],
    ] as const) {
      const theirs = await encrypt(Buffer.from('not mine'), other);
      // The record of run A names the foreign bytes' sha256: only the binding can tell.
      const run = { ...runOf(A, theirs) };
      await assert.rejects(
        fetchVerified(remote([theirs]), run, MASTER, dir),
        (e: Error) => e instanceof ArtifactBindingError && why.test(e.message),
      );
      assert.deepEqual(await readdir(spoolRoot(dir)), []);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the spool is removed when the check fails or the destination breaks off, and swept at boot', async () => {
  const dir = dataDir();
  try {
    const bytes = await encrypt(randomBytes(300_000), A);
    const flipped = Buffer.from(bytes);
    flipped[flipped.length - 100]! ^= 1;
    await assert.rejects(
      fetchVerified(remote([flipped]), runOf(A, bytes), MASTER, dir),
      /failed authentication/,
    );
    assert.deepEqual(await readdir(spoolRoot(dir)), []);
    const broken: ArtifactStore = {
      async put() {},
      async remove() {},
      async get() {
        return new Readable({
          read() {
            this.push(bytes.subarray(0, 1000));
            this.destroy(new Error('connection reset'));
          },
        });
      },
    };
    await assert.rejects(fetchVerified(broken, runOf(A, bytes), MASTER, dir), /connection reset/);
    assert.deepEqual(await readdir(spoolRoot(dir)), []);
    await mkdir(join(spoolRoot(dir), 'backup-left'), { recursive: true });
    await writeFile(join(spoolRoot(dir), 'backup-left', 'artifact'), 'x');
    await sweepSpool(dir);
    assert.deepEqual(await readdir(spoolRoot(dir)), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a local artifact is read in place through one open handle, not spooled', async () => {
  const dir = dataDir();
  try {
    const plain = Buffer.from('local dump');
    const bytes = await encrypt(plain, A);
    const store = localStore(dir);
    await store.put(`${A.app_id}/${A.run_id}.svcbak`, Readable.from([bytes]));
    const copy = await fetchVerified(store, runOf(A, bytes), MASTER, dir);
    assert.deepEqual(await readdir(spoolRoot(dir)).catch(() => []), []);
    assert.deepEqual(await collect(copy.plain()), plain);
    await copy.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
