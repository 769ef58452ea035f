// The app's working copy, reused across deploys: `<dataDir>/work/<appId>/repo`. A deploy
// fetches the ref shallowly into it (cheap when little changed); when that fails, or the copy
// has grown past the size bound, it is replaced by a fresh shallow clone made next to it in
// `.clone-<deploymentId>` and renamed into place, so a crash never leaves a half-written `repo`
// in use (boot removes stray `.clone-*` directories).
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit, shallowClone, treeSize, GitError, type CloneResult } from '../git/clone.js';
import { checkRef, checkRepoUrl } from '../git/validate.js';

export interface CheckoutOptions {
  workRoot: string;
  appId: string;
  deploymentId: string;
  url: string;
  ref: string;
  env: Record<string, string>;
  signal?: AbortSignal;
  timeoutMs: number;
  maxBytes: number;
  log: (line: string) => void;
}

export function appWorkDir(workRoot: string, appId: string): string {
  return join(workRoot, appId);
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

async function head(dir: string): Promise<CloneResult> {
  const out = await runGit(['log', '-1', '--format=%H%n%s'], { cwd: dir, timeoutMs: 10_000 });
  const [commit, ...subject] = out.split('\n');
  return { commit: commit!.trim(), subject: subject.join('\n').trim() };
}

export async function checkout(opts: CheckoutOptions): Promise<CloneResult & { dir: string; fresh: boolean }> {
  const u = checkRepoUrl(opts.url);
  if (!u.ok) throw new GitError(`repo_url: ${u.reason}`, 'invalid');
  const r = checkRef(opts.ref);
  if (!r.ok) throw new GitError(`ref: ${r.reason}`, 'invalid');
  const base = appWorkDir(opts.workRoot, opts.appId);
  const repo = join(base, 'repo');
  await mkdir(base, { recursive: true, mode: 0o700 });
  const deadline = Date.now() + opts.timeoutMs;
  const left = () => Math.max(1000, deadline - Date.now());
  if (await exists(join(repo, '.git'))) {
    try {
      // The URL is given explicitly (not a stored remote): a changed repo_url takes effect at once.
      await runGit(['fetch', '--depth', '1', '--no-tags', '--force', '--', opts.url, opts.ref], {
        cwd: repo, env: opts.env, signal: opts.signal, timeoutMs: left(),
        onTick: async () => ((await treeSize(repo)) > opts.maxBytes ? `repository is larger than ${opts.maxBytes} bytes` : null),
      });
      await runGit(['checkout', '--force', '--detach', 'FETCH_HEAD'], { cwd: repo, signal: opts.signal, timeoutMs: left() });
      await runGit(['clean', '-ffdxq'], { cwd: repo, signal: opts.signal, timeoutMs: left() });
      if ((await treeSize(repo)) > opts.maxBytes) throw new GitError('working copy outgrew the size bound', 'too_large');
      return { ...(await head(repo)), dir: repo, fresh: false };
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      opts.log(`fetch into the working copy failed (${e instanceof Error ? e.message : String(e)}); cloning afresh`);
    }
  }
  const tmp = join(base, `.clone-${opts.deploymentId}`);
  await rm(tmp, { recursive: true, force: true });
  try {
    const res = await shallowClone({ url: opts.url, ref: opts.ref, dir: tmp, env: opts.env, signal: opts.signal, timeoutMs: left(), maxBytes: opts.maxBytes });
    await rm(repo, { recursive: true, force: true });
    await rename(tmp, repo);
    return { ...res, dir: repo, fresh: true };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Boot-time cleanup of clones a dead process left half-made. */
export async function removeStrayClones(workRoot: string): Promise<number> {
  let removed = 0;
  let apps: string[];
  try {
    apps = await readdir(workRoot);
  } catch {
    return 0;
  }
  for (const a of apps) {
    let names: string[];
    try {
      names = await readdir(join(workRoot, a));
    } catch {
      continue;
    }
    for (const n of names) {
      if (n.startsWith('.clone-')) {
        await rm(join(workRoot, a, n), { recursive: true, force: true });
        removed++;
      }
    }
  }
  return removed;
}
