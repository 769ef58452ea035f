// The app's git working copy, reused across deploys: `<dataDir>/work/<appId>/repo`. No
// container ever sees it (relative bind mounts come from per-deployment copies, see mounts.ts),
// and it is reused only while its git configuration is byte for byte the one the control plane
// wrote: the digest of `.git/config` is kept beside it (`repo.config.sha256`, outside the
// repository) and compared before every fetch. Any difference, a missing digest, or a file that
// makes git read something else (info/attributes, alternates, a `.git` that is not a plain
// directory) means a fresh clone.
//
// A deploy fetches the ref shallowly into the working copy (cheap when little changed); when that
// fails, or the copy has grown past the size bound, a fresh shallow clone is made next to it in
// `.clone-<deploymentId>` and renamed into place, so a crash never leaves a half-written `repo` in
// use (boot removes stray `.clone-*` directories). The copy it replaces is moved aside to
// `.old-<deploymentId>`, not deleted in place: a container made by an earlier version of the
// control plane may still have it mounted, and only mounts.ts deletes it once nothing does.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
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

const DIGEST_FILE = 'repo.config.sha256';
/** Files git would read from `.git` that a clone of ours never has. */
const FOREIGN = ['info/attributes', 'objects/info/alternates', 'objects/info/http-alternates', 'commondir', 'config.worktree'];

/** Digest of the working copy's `.git/config`, or null when `.git` is not what a clone makes. */
export async function configDigest(repo: string): Promise<string | null> {
  const git = join(repo, '.git');
  try {
    if (!(await lstat(git)).isDirectory()) return null;
    const config = join(git, 'config');
    if (!(await lstat(config)).isFile()) return null;
    for (const f of FOREIGN) {
      if (
        await lstat(join(git, f)).then(
          () => true,
          () => false,
        )
      )
        return null;
    }
    return createHash('sha256')
      .update(await readFile(config))
      .digest('hex');
  } catch {
    return null;
  }
}

/** Whether the working copy is still exactly what the control plane made (see the top comment). */
export async function reusable(base: string): Promise<boolean> {
  const repo = join(base, 'repo');
  if (!(await exists(join(repo, '.git')))) return false;
  const expected = await readFile(join(base, DIGEST_FILE), 'utf8').then(
    (s) => s.trim(),
    () => null,
  );
  const actual = await configDigest(repo);
  return expected !== null && actual !== null && expected === actual;
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
    if (!(await reusable(base))) {
      opts.log("the working copy's git configuration is not the one the control plane wrote; it is not used: cloning afresh");
    } else {
      try {
        // The URL is given explicitly (not a stored remote): a changed repo_url takes effect at once.
        await runGit(['fetch', '--depth', '1', '--no-tags', '--force', '--', opts.url, opts.ref], {
          cwd: repo,
          env: opts.env,
          signal: opts.signal,
          timeoutMs: left(),
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
  }
  const tmp = join(base, `.clone-${opts.deploymentId}`);
  await rm(tmp, { recursive: true, force: true });
  try {
    const res = await shallowClone({ url: opts.url, ref: opts.ref, dir: tmp, env: opts.env, signal: opts.signal, timeoutMs: left(), maxBytes: opts.maxBytes });
    const digest = await configDigest(tmp);
    if (!digest) throw new GitError('the fresh clone has no plain .git/config', 'failed');
    await rm(join(base, DIGEST_FILE), { force: true });
    if (
      await lstat(repo).then(
        () => true,
        () => false,
      )
    )
      await rename(repo, join(base, `.old-${opts.deploymentId}`));
    await rename(tmp, repo);
    await writeFile(join(base, DIGEST_FILE), `${digest}\n`, { mode: 0o600 });
    return { ...res, dir: repo, fresh: true };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Boot-time cleanup of clones and copies a dead process left half-made (never mounted). */
export async function removeStrayClones(workRoot: string): Promise<number> {
  let removed = 0;
  let apps: string[];
  try {
    apps = await readdir(workRoot);
  } catch {
    return 0;
  }
  for (const a of apps) {
    for (const dir of [join(workRoot, a), join(workRoot, a, 'deployments')]) {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        continue;
      }
      for (const n of names) {
        if (n.startsWith('.clone-') || n.startsWith('.tmp-')) {
          await rm(join(dir, n), { recursive: true, force: true });
          removed++;
        }
      }
    }
  }
  return removed;
}
