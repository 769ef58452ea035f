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
//
// A deploy of one commit (`commit`, full or abbreviated) first gets the ref as above, then looks
// for the commit on the ref's history, deepening the shallow history in a few bounded steps (the
// same size bound, deadline and hardened git) until it is found or the whole history is there.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit, shallowClone, treeSize, GitError, type CloneResult } from '../git/clone.js';
import { checkCommit, checkRef, checkRepoUrl } from '../git/validate.js';

export interface CheckoutOptions {
  workRoot: string;
  appId: string;
  deploymentId: string;
  url: string;
  ref: string;
  /** Deploy exactly this commit (hex, 4..40 digits), which must be on `ref`'s history. */
  commit?: string | null;
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
const FOREIGN = [
  'info/attributes',
  'objects/info/alternates',
  'objects/info/http-alternates',
  'commondir',
  'config.worktree',
];

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

export async function checkout(
  opts: CheckoutOptions,
): Promise<CloneResult & { dir: string; fresh: boolean }> {
  const deadline = Date.now() + opts.timeoutMs;
  const left = () => Math.max(1000, deadline - Date.now());
  const got = await checkoutRef(opts, left);
  if (!opts.commit) return got;
  return { ...(await checkoutCommit(got.dir, opts.commit, opts, left)), dir: got.dir, fresh: got.fresh };
}

/** Depths fetched in turn while the commit is not found on the ref's history (the last one: all of it). */
const DEEPEN = [50, 500, 5000, 2147483647];

async function checkoutCommit(
  repo: string,
  want: string,
  opts: CheckoutOptions,
  left: () => number,
): Promise<CloneResult> {
  const c = checkCommit(want);
  if (!c.ok) throw new GitError(`commit: ${c.reason}`, 'invalid');
  const git = (
    args: string[],
    extra: { onTick?: () => Promise<string | null>; env?: Record<string, string> } = {},
  ) => runGit(args, { cwd: repo, signal: opts.signal, timeoutMs: left(), ...extra });
  let tip = (await head(repo)).commit;
  for (let i = 0; ; i++) {
    const found = await onHistory(want, tip, git);
    if (found) {
      await git(['checkout', '--force', '--detach', found]);
      await git(['clean', '-ffdxq']);
      if ((await treeSize(repo)) > opts.maxBytes)
        throw new GitError(`repository is larger than ${opts.maxBytes} bytes`, 'too_large');
      return head(repo);
    }
    const depth = DEEPEN[i];
    if (depth === undefined)
      throw new GitError(`commit ${want} is not on the history of ${opts.ref}`, 'invalid');
    opts.log(
      `commit ${want} is not in what was fetched of ${opts.ref}: fetching ${depth > 1e6 ? 'its whole history' : `its last ${depth} commits`}`,
    );
    await git(['fetch', '--depth', String(depth), '--no-tags', '--force', '--', opts.url, opts.ref], {
      env: opts.env,
      onTick: async () =>
        (await treeSize(repo)) > opts.maxBytes ? `repository is larger than ${opts.maxBytes} bytes` : null,
    });
    tip = (await git(['rev-parse', '--verify', '--end-of-options', 'FETCH_HEAD^{commit}'])).trim();
  }
}

/** The full hash of `want` when it names a commit that `tip` descends from; null when not (yet) found. */
async function onHistory(
  want: string,
  tip: string,
  git: (args: string[]) => Promise<string>,
): Promise<string | null> {
  let full: string;
  try {
    full = (await git(['rev-parse', '--verify', '--end-of-options', `${want}^{commit}`])).trim();
  } catch (e) {
    if (!(e instanceof GitError) || e.kind !== 'failed') throw e;
    // Deeper history only adds candidates: an ambiguous prefix stays ambiguous.
    if (/ambiguous/.test(e.message))
      throw new GitError(`commit ${want} is ambiguous in the repository: give more of its digits`, 'invalid');
    return null;
  }
  try {
    await git(['merge-base', '--is-ancestor', '--', full, tip]);
    return full;
  } catch (e) {
    // Exit status 1 is merge-base's "no": present (fetched for another ref) but not on this history.
    if (e instanceof GitError && e.exitCode === 1) return null;
    throw e;
  }
}

async function checkoutRef(
  opts: CheckoutOptions,
  left: () => number,
): Promise<CloneResult & { dir: string; fresh: boolean }> {
  const u = checkRepoUrl(opts.url);
  if (!u.ok) throw new GitError(`repo_url: ${u.reason}`, 'invalid');
  const r = checkRef(opts.ref);
  if (!r.ok) throw new GitError(`ref: ${r.reason}`, 'invalid');
  const base = appWorkDir(opts.workRoot, opts.appId);
  const repo = join(base, 'repo');
  await mkdir(base, { recursive: true, mode: 0o700 });
  if (await exists(join(repo, '.git'))) {
    if (!(await reusable(base))) {
      opts.log(
        "the working copy's git configuration is not the one the control plane wrote; it is not used: cloning afresh",
      );
    } else {
      try {
        // The URL is given explicitly (not a stored remote): a changed repo_url takes effect at once.
        await runGit(['fetch', '--depth', '1', '--no-tags', '--force', '--', opts.url, opts.ref], {
          cwd: repo,
          env: opts.env,
          signal: opts.signal,
          timeoutMs: left(),
          onTick: async () =>
            (await treeSize(repo)) > opts.maxBytes
              ? `repository is larger than ${opts.maxBytes} bytes`
              : null,
        });
        await runGit(['checkout', '--force', '--detach', 'FETCH_HEAD'], {
          cwd: repo,
          signal: opts.signal,
          timeoutMs: left(),
        });
        await runGit(['clean', '-ffdxq'], { cwd: repo, signal: opts.signal, timeoutMs: left() });
        if ((await treeSize(repo)) > opts.maxBytes)
          throw new GitError('working copy outgrew the size bound', 'too_large');
        return { ...(await head(repo)), dir: repo, fresh: false };
      } catch (e) {
        if (opts.signal?.aborted) throw e;
        opts.log(
          `fetch into the working copy failed (${e instanceof Error ? e.message : String(e)}); cloning afresh`,
        );
      }
    }
  }
  const tmp = join(base, `.clone-${opts.deploymentId}`);
  await rm(tmp, { recursive: true, force: true });
  try {
    const res = await shallowClone({
      url: opts.url,
      ref: opts.ref,
      dir: tmp,
      env: opts.env,
      signal: opts.signal,
      timeoutMs: left(),
      maxBytes: opts.maxBytes,
    });
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
