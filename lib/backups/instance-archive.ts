// What an instance backup holds, as a tar: `manifest.json`, `svc.db` (a consistent online copy of the
// control database; the settings are in it) and `caddy/...` (Caddy's data directory: certificates,
// ACME account keys). Never the master key: it lives outside the data directory's database, and
// the artifact is useless without it. Reading takes only these names, as plain files and
// directories, relative and without `..`, written 0600/0700: even an authenticated archive is
// not trusted to place anything anywhere else.
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, readFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import tar from 'tar-stream';
import BetterSqlite3 from 'better-sqlite3';

export const ARCHIVE_FORMAT = 'svc-instance-backup/1';

export interface Manifest {
  format: string;
  instance_id: string;
  run_id: string;
  version: string;
  created_at: string;
  /** Caddy's data directory as the backed-up instance saw it; null when it was not included. */
  caddy_storage: string | null;
  notes: string | null;
}

/** Caddy's lock files belong to the process that held them; a restored one would only block it. */
const SKIP_CADDY = new Set(['locks']);
const MAX_FILES = 100_000;

interface Item {
  name: string;
  path: string;
  dir: boolean;
  size: number;
}

async function walk(root: string, prefix: string, out: Item[]): Promise<void> {
  for (const name of (await readdir(root)).sort()) {
    if (prefix === 'caddy' && SKIP_CADDY.has(name)) continue;
    const path = join(root, name);
    const st = await lstat(path);
    // Symlinks and special files are skipped: they could point outside what is backed up.
    if (!st.isFile() && !st.isDirectory()) continue;
    if (out.length >= MAX_FILES) throw new Error(`more than ${MAX_FILES} files in ${root}`);
    out.push({ name: `${prefix}/${name}`, path, dir: st.isDirectory(), size: st.size });
    if (st.isDirectory()) await walk(path, `${prefix}/${name}`, out);
  }
}

/** The tar stream of a staged backup: the manifest, the database copy, and Caddy's directory if given. */
export function packInstance(manifest: Manifest, dbCopy: string, caddyDir: string | null): Readable {
  const pack = tar.pack();
  const entry = (header: Partial<tar.Header> & { name: string }, file?: string) =>
    new Promise<void>((resolve, reject) => {
      const e = pack.entry(header as tar.Header, (err) => (err ? reject(err) : resolve()));
      if (file) createReadStream(file).on('error', reject).pipe(e);
      else e.end(Buffer.alloc(0));
    });
  void (async () => {
    const json = Buffer.from(JSON.stringify(manifest, null, 2));
    await new Promise<void>((resolve, reject) =>
      pack.entry({ name: 'manifest.json', mode: 0o600 }, json, (err) => (err ? reject(err) : resolve())),
    );
    await entry({ name: 'svc.db', mode: 0o600, size: (await lstat(dbCopy)).size }, dbCopy);
    if (caddyDir) {
      const items: Item[] = [];
      await walk(caddyDir, 'caddy', items);
      await entry({ name: 'caddy', type: 'directory', mode: 0o700 });
      for (const it of items)
        await entry(
          it.dir
            ? { name: it.name, type: 'directory', mode: 0o700 }
            : { name: it.name, mode: 0o600, size: it.size },
          it.dir ? undefined : it.path,
        );
    }
    pack.finalize();
  })().catch((e: Error) => pack.destroy(e));
  return pack as unknown as Readable;
}

function safeName(name: string): string | null {
  const n = posix.normalize(name.replace(/\/+$/, ''));
  if (n.startsWith('/') || n.split('/').some((p) => p === '..' || p === '' || p === '.')) return null;
  if (n === 'manifest.json' || n === 'svc.db' || n === 'caddy' || n.startsWith('caddy/')) return n;
  return null;
}

/** Unpacks an instance archive (the plain tar) into `dir`; returns its manifest. */
export async function unpackInstance(
  archive: Readable,
  dir: string,
): Promise<{ manifest: Manifest; caddy: boolean }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const extract = tar.extract();
  let caddy = false;
  let count = 0;
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const name = safeName(header.name);
      const fail = (e: Error) => {
        stream.resume();
        reject(e);
      };
      if (!name)
        return fail(
          new Error(`unexpected entry in the instance backup: ${JSON.stringify(header.name.slice(0, 100))}`),
        );
      if (++count > MAX_FILES + 3) return fail(new Error('too many entries in the instance backup'));
      if (name === 'caddy' || name.startsWith('caddy/')) caddy = true;
      const target = join(dir, ...name.split('/'));
      if (header.type === 'directory') {
        stream.resume();
        mkdir(target, { recursive: true, mode: 0o700 }).then(() => next(), reject);
      } else if (header.type === 'file') {
        mkdir(dirname(target), { recursive: true, mode: 0o700 })
          .then(() => pipeline(stream, createWriteStream(target, { mode: 0o600, flags: 'wx' })))
          .then(() => next(), reject);
      } else {
        fail(new Error(`unexpected ${header.type} entry in the instance backup`));
      }
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  await Promise.all([pipeline(archive, extract), done]);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    throw new Error('the instance backup has no readable manifest');
  }
  if (manifest.format !== ARCHIVE_FORMAT)
    throw new Error(`unknown instance backup format ${JSON.stringify(manifest.format)}`);
  await lstat(join(dir, 'svc.db')).catch(() => {
    throw new Error('the instance backup holds no database copy');
  });
  return { manifest, caddy };
}

/** SQLite's own check of a database file; throws unless it answers `ok`. */
export function checkDatabase(file: string): void {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    const bad = rows.map((r) => r.integrity_check).filter((r) => r !== 'ok');
    if (bad.length || rows.length === 0)
      throw new Error(
        `the database copy fails its integrity check: ${bad.slice(0, 3).join('; ').slice(0, 300)}`,
      );
  } finally {
    db.close();
  }
}
