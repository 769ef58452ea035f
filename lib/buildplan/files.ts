// A read-only view of a checkout for detection. The repository is hostile: a path is relative, has no
// `..`, and a symlink that leads out of the checkout is refused rather than followed; reads and
// listings are bounded. The in-memory view behaves the same way, so unit tests need no disk.
import { constants } from 'node:fs';
import { open, opendir, realpath, stat } from 'node:fs/promises';
import { posix } from 'node:path';
import { resolveInside } from '../util/paths.js';
import { PlanError } from './types.js';

export const MAX_READ = 1024 * 1024;
export const MAX_ENTRIES = 1000;
const MAX_PATH = 1024;
const MAX_LINKS = 40;

export interface DirEntry {
  name: string;
  dir: boolean;
  /** A symlink (never reported as a directory, so a walk does not wander through it). */
  link: boolean;
}

export interface RepoFiles {
  /** A regular file or directory at path (symlinks inside the checkout followed). */
  exists(path: string): Promise<boolean>;
  /** The file's text, or null when it is absent or not a regular file; larger than maxBytes is refused. */
  read(path: string, maxBytes?: number): Promise<string | null>;
  /** The entries of a directory ('' is the root), sorted by name, at most MAX_ENTRIES; [] when absent. */
  list(dir: string): Promise<DirEntry[]>;
}

const outside = (path: string) =>
  new PlanError(path, 'path', 'resolves outside the repository (a symlink?); refused');

/** Refuses what no repository-relative path looks like; '' (the root) only where allowEmpty. */
export function checkRelPath(path: string, allowEmpty = false): string {
  if (typeof path !== 'string' || path.length > MAX_PATH)
    throw new PlanError(String(path).slice(0, 80), 'path', 'is not a path');
  if (path === '' && allowEmpty) return '';
  if (/[\u0000-\u001f\u007f\\]/.test(path))
    throw new PlanError(JSON.stringify(path), 'path', 'contains a control character or a backslash');
  if (path.startsWith('/'))
    throw new PlanError(path, 'path', 'is absolute; only paths inside the repository are read');
  const segments = path.replace(/\/$/, '').split('/');
  if (segments.includes('..')) throw new PlanError(path, 'path', 'climbs out of the repository (..)');
  if (segments.some((s) => s === '' || s === '.'))
    throw new PlanError(path, 'path', 'is not a plain relative path');
  return segments.join('/');
}

function tooLarge(path: string, max: number): PlanError {
  return new PlanError(path, 'file', `is larger than ${max} bytes; refused`);
}

const text = (buf: Buffer) => buf.toString('utf8').replace(/^\uFEFF/, '');

/** The checkout at root, read through its real path. */
export function diskFiles(root: string): RepoFiles {
  let real: Promise<string> | null = null;
  const resolve = async (path: string, allowEmpty = false): Promise<string> => {
    const rel = checkRelPath(path, allowEmpty);
    real ??= realpath(root);
    const p = await resolveInside(await real, rel || '.');
    if (p === null) throw outside(path);
    return p;
  };
  const kind = async (p: string) => {
    try {
      const s = await stat(p);
      return s.isFile() ? 'file' : s.isDirectory() ? 'dir' : 'other';
    } catch {
      return 'none';
    }
  };
  return {
    async exists(path) {
      const k = await kind(await resolve(path));
      return k === 'file' || k === 'dir';
    },
    async read(path, maxBytes = MAX_READ) {
      const max = Math.min(maxBytes, MAX_READ);
      const p = await resolve(path);
      if ((await kind(p)) !== 'file') return null;
      // O_NOFOLLOW: p is already the real path, so a symlink here appeared after the check.
      const fh = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
        () => null,
      );
      if (!fh) return null;
      try {
        const s = await fh.stat();
        if (!s.isFile()) return null;
        if (s.size > max) throw tooLarge(path, max);
        const buf = Buffer.alloc(max + 1);
        const { bytesRead } = await fh.read(buf, 0, max + 1, 0);
        if (bytesRead > max) throw tooLarge(path, max);
        return text(buf.subarray(0, bytesRead));
      } finally {
        await fh.close();
      }
    },
    async list(path) {
      const p = await resolve(path, true);
      if ((await kind(p)) !== 'dir') return [];
      const out: DirEntry[] = [];
      const d = await opendir(p);
      try {
        for await (const e of d) {
          out.push({ name: e.name, dir: e.isDirectory(), link: e.isSymbolicLink() });
          if (out.length >= MAX_ENTRIES) break;
        }
      } finally {
        await d.close().catch(() => {});
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
  };
}

/** A fixture tree: path -> file text, or a symlink (its target as `ln -s` would store it). */
export type MemoryTree = Record<string, string | { symlink: string }>;

/** The same view over an object, for unit tests: directories are implied by the paths under them. */
export function memoryFiles(tree: MemoryTree): RepoFiles {
  const entries = new Map(Object.entries(tree).map(([k, v]) => [checkRelPath(k), v]));
  const isDir = (p: string) => p === '' || [...entries.keys()].some((k) => k.startsWith(`${p}/`));
  /** The real path of rel inside the tree, symlinks followed; throws when one leads outside. */
  const resolve = (path: string, allowEmpty = false): string => {
    let pending = checkRelPath(path, allowEmpty).split('/').filter(Boolean);
    const done: string[] = [];
    let hops = 0;
    while (pending.length) {
      const seg = pending.shift()!;
      if (seg === '.') continue;
      if (seg === '..') {
        if (!done.length) throw outside(path);
        done.pop();
        continue;
      }
      const here = [...done, seg].join('/');
      const v = entries.get(here);
      if (v !== undefined && typeof v !== 'string') {
        if (++hops > MAX_LINKS) throw new PlanError(path, 'path', 'has too many levels of symlinks');
        if (v.symlink.startsWith('/')) throw outside(path);
        pending = [...v.symlink.split('/').filter(Boolean), ...pending];
        continue;
      }
      done.push(seg);
    }
    return done.join('/');
  };
  return {
    async exists(path) {
      const p = resolve(path);
      return typeof entries.get(p) === 'string' || isDir(p);
    },
    async read(path, maxBytes = MAX_READ) {
      const max = Math.min(maxBytes, MAX_READ);
      const v = entries.get(resolve(path));
      if (typeof v !== 'string') return null;
      if (Buffer.byteLength(v) > max) throw tooLarge(path, max);
      return v.replace(/^\uFEFF/, '');
    },
    async list(path) {
      const p = resolve(path, true);
      if (!isDir(p)) return [];
      const prefix = p ? `${p}/` : '';
      const names = new Map<string, DirEntry>();
      for (const [k, v] of entries) {
        if (!k.startsWith(prefix)) continue;
        const [name, ...rest] = k.slice(prefix.length).split('/');
        if (!names.has(name!))
          names.set(name!, {
            name: name!,
            dir: rest.length > 0,
            link: !rest.length && typeof v !== 'string',
          });
      }
      return [...names.values()]
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .slice(0, MAX_ENTRIES);
    },
  };
}

/** Joins repository-relative segments (no leading slash, no `..`). */
export const joinRel = (...parts: string[]) => posix.join(...parts.filter(Boolean)).replace(/^\.\/?/, '');
