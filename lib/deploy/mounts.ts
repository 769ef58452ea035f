// Where the relative bind mounts of a compose file (`./x:/y`) come from. Never the git working
// copy: nothing a container can write is ever read by git or any other host-side process.
//
//   <work>/<app id>/deployments/<deployment id>/src        this deployment's copy of the
//       checkout without any `.git`; read-only binds mount from it, no container writes it
//   <work>/<app id>/deployments/<deployment id>/rw/<key>   a private copy for one writable bind
//       of the repository root or of a file: the source, fresh on every deploy; what the app
//       writes there lasts until the next deploy
//   volume svc-<app>__bind-<name>-<hash>                   a writable bind of a folder: the
//       app's data, kept across deploys (and on app deletion unless volumes are deleted too);
//       filled from the repository's folder when it is first created, never touched afterwards
//
// Each writable bind gets a folder or volume of its own, so the folders above every bind source
// are written by the control plane alone, and the engine, which follows symlinks on a source's
// path each time it starts a container, finds the same thing every time.
import { createHash } from 'node:crypto';
import { cp, lstat, mkdir, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { ComposeModel } from '../compose/index.js';
import { bindKey, relativeKey, showBind, type BindSource, type BindTable } from '../docker/binds.js';
import type { Engine } from '../docker/engine.js';
import { guard } from '../docker/engine.js';
import { resolveInside, within } from '../util/paths.js';
import { appWorkDir } from './workdir.js';

export function deploymentsDir(workRoot: string, appId: string): string {
  return join(appWorkDir(workRoot, appId), 'deployments');
}

/** This deployment's copy of the repository, when it made one (relative binds). */
export function sourceCopy(workRoot: string, appId: string, deploymentId: string): string {
  return join(deploymentsDir(workRoot, appId), deploymentId, 'src');
}

/** The relative binds of a model: each source with its mode, once. */
export function relativeBinds(model: ComposeModel): { source: string; readOnly: boolean }[] {
  const seen = new Map<string, { source: string; readOnly: boolean }>();
  for (const s of Object.values(model.services)) {
    for (const m of s.volumes) {
      if (m.type === 'bind' && m.relative)
        seen.set(bindKey(m.source, m.readOnly), { source: m.source, readOnly: m.readOnly });
    }
  }
  return [...seen.values()];
}

function withoutGit(src: string): boolean {
  return basename(src) !== '.git';
}

/** A name for a volume or folder from a relative path: readable, and unique through the hash. */
function slug(rel: string): string {
  const readable =
    rel === '.'
      ? 'root'
      : rel
          .replace(/[^A-Za-z0-9_.-]+/g, '-')
          .replace(/^[-.]+/, '')
          .slice(0, 40) || 'x';
  return `${readable}-${createHash('sha256').update(rel).digest('hex').slice(0, 8)}`;
}

export interface PrepareOptions {
  workRoot: string;
  appId: string;
  deploymentId: string;
  /** The files of this deployment: the checkout, or the copy a rolled-back-to deployment kept. */
  checkout: string;
  model: ComposeModel;
  log: (line: string) => void;
}

/**
 * Copies the checkout (without `.git`) for this deployment and decides every relative bind.
 * Returns an empty table when the model has none (nothing is copied then).
 */
export async function prepareBinds(opts: PrepareOptions): Promise<BindTable> {
  const table: BindTable = new Map();
  const binds = relativeBinds(opts.model);
  if (!binds.length) return table;
  const depDir = join(deploymentsDir(opts.workRoot, opts.appId), opts.deploymentId);
  const tmp = join(deploymentsDir(opts.workRoot, opts.appId), `.tmp-${opts.deploymentId}`);
  await mkdir(deploymentsDir(opts.workRoot, opts.appId), { recursive: true, mode: 0o700 });
  await rm(tmp, { recursive: true, force: true });
  await rm(depDir, { recursive: true, force: true });
  await mkdir(tmp, { mode: 0o700 });
  // Symlinks are copied as they are (never followed): each bind source is resolved below.
  await cp(opts.checkout, join(tmp, 'src'), { recursive: true, verbatimSymlinks: true, filter: withoutGit });
  await rename(tmp, depDir);
  const src = await realpath(join(depDir, 'src'));
  for (const b of binds) {
    const r = await decide(src, depDir, b.source, b.readOnly);
    table.set(bindKey(b.source, b.readOnly), r);
    if (r.kind === 'volume') {
      opts.log(
        `bind ${showBind(b.source)} (writable folder): the app's data, kept across deploys in a volume${r.seed ? "; filled from the repository only when the volume is first created, later commits do not change it (mount it :ro to get each deployment's files)" : ''}`,
      );
    } else if (r.kind === 'bind' && !b.readOnly) {
      opts.log(
        `bind ${showBind(b.source)} (writable ${relativeKey(b.source) === '.' ? 'repository root' : 'file'}): a fresh copy of this deployment's files; what the app writes there lasts until the next deploy`,
      );
    }
  }
  return table;
}

async function decide(src: string, depDir: string, source: string, readOnly: boolean): Promise<BindSource> {
  const rel = relativeKey(source);
  const real = await resolveInside(src, rel);
  if (real === null)
    return {
      kind: 'refused',
      reason: `bind source "${showBind(source)}" resolves outside the repository (a symlink?); refused`,
    };
  const st = await stat(real).catch(() => null);
  if (readOnly) {
    // The compose CLI creates a missing bind source as a folder; the copy is ours, so do the same.
    if (!st) {
      try {
        await mkdir(real, { recursive: true, mode: 0o755 });
      } catch {
        return {
          kind: 'refused',
          reason: `bind source "${showBind(source)}" cannot be created in the repository's copy`,
        };
      }
    }
    return { kind: 'bind', source: real };
  }
  if (rel === '.' || (st && !st.isDirectory())) {
    const rwDir = join(depDir, 'rw');
    await mkdir(rwDir, { recursive: true, mode: 0o700 });
    const copy = join(rwDir, slug(rel));
    await cp(real, copy, { recursive: true, verbatimSymlinks: true, filter: withoutGit });
    return { kind: 'bind', source: copy };
  }
  return { kind: 'volume', key: `_bind-${slug(rel)}`, seed: st ? real : null };
}

/**
 * Removes the copies of earlier deployments, keeping the newest `keep` (for rollback) and any
 * that a container on the engine still mounts, so a folder is deleted only once no container
 * can write into it. Also removes working copies moved aside (`.old-*`) on the same terms.
 */
export async function pruneDeploymentCopies(
  engine: Engine,
  workRoot: string,
  appId: string,
  keep: number,
  current: string,
): Promise<string[]> {
  // Mount sources are real paths: compare with real paths.
  const base = await realpath(appWorkDir(workRoot, appId)).catch(() => null);
  if (!base) return [];
  const inUse: string[] = [];
  await guard(engine, async () => {
    for (const c of await engine.docker.listContainers({ all: true }))
      for (const m of c.Mounts ?? []) if (m.Type === 'bind') inUse.push(m.Source);
  });
  const mounted = (dir: string) => inUse.some((s) => within(dir, s));
  const removed: string[] = [];
  const candidates: string[] = [];
  const depsDir = join(base, 'deployments');
  const deps = await readdir(depsDir).catch(() => [] as string[]);
  // Deployment ids sort by creation time.
  const kept = new Set(
    deps
      .filter((d) => !d.startsWith('.'))
      .sort()
      .reverse()
      .slice(0, keep),
  );
  for (const d of deps)
    if (d !== current && !kept.has(d) && !d.startsWith('.tmp-')) candidates.push(join(depsDir, d));
  for (const n of await readdir(base).catch(() => [] as string[]))
    if (n.startsWith('.old-')) candidates.push(join(base, n));
  for (const dir of candidates) {
    if (mounted(dir)) continue;
    if (
      !(await lstat(dir).then(
        (s) => s.isDirectory(),
        () => false,
      ))
    )
      continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
