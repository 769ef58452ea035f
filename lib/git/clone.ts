// Shallow clones with the git CLI: argument arrays, `--` before positionals, no prompts, no
// local transports, and hard bounds on time and on the size of what lands on disk.
//
// Repository content is hostile, and so is anything that could have written into a `.git`
// directory: git runs with no system or global configuration, a private empty HOME, hooks,
// fsmonitor and attribute files switched off, and the working copy's own configuration is
// checked before each reuse (lib/deploy/workdir.ts). What is left for a filter driver or a
// command-valued setting to come from is the command line, which is ours.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { mkdtemp, rm, readdir, lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRef, checkRepoUrl, redactUrls } from './validate.js';
import { GitError } from './errors.js';
import { anonymousSshCommand } from './sshcmd.js';

export { GitError };

export interface CloneOptions {
  url: string;
  ref: string;
  /** Must not exist yet, or be empty. */
  dir: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxBytes?: number;
  /** Extra environment (e.g. GIT_SSH_COMMAND with a deploy key). */
  env?: Record<string, string>;
}

export interface CloneResult {
  commit: string;
  subject: string;
}

const DEFAULT_TIMEOUT = 120_000;
const DEFAULT_MAX = 512 * 1024 * 1024;

/** Options that keep git from running helpers or reading repositories it was not given. */
export const SAFE_CONFIG = [
  '-c',
  'protocol.file.allow=never',
  '-c',
  'protocol.ext.allow=never',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.attributesFile=/dev/null',
  '-c',
  'submodule.recurse=false',
  '-c',
  'credential.helper=',
];

let home: string | undefined;

/**
 * An empty 0700 directory of this process, used as HOME and XDG_CONFIG_HOME: no ~/.gitconfig,
 * ~/.config/git or credential store of the service user is read (ssh reads ~ from the password
 * database instead, hence the explicit ssh options in sshcmd.ts).
 */
export function privateHome(): string {
  home ??= mkdtempSync(join(tmpdir(), 'svc-git-home-'));
  return home;
}

export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const h = privateHome();
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: h,
    XDG_CONFIG_HOME: h,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_SSH_COMMAND: anonymousSshCommand(join(h, 'known_hosts')),
    GIT_SSH_VARIANT: 'ssh',
    LC_ALL: 'C',
    ...extra,
  };
}

/** Runs git; rejects on a non-zero exit with its (trimmed) stderr. */
export function runGit(
  args: string[],
  opts: {
    cwd?: string;
    env?: Record<string, string>;
    signal?: AbortSignal;
    timeoutMs?: number;
    onTick?: () => Promise<string | null>;
  },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...SAFE_CONFIG, ...args], {
      cwd: opts.cwd,
      env: gitEnv(opts.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let killedFor: GitError | undefined;
    const kill = (err: GitError) => {
      if (killedFor) return;
      killedFor = err;
      child.kill('SIGKILL');
    };
    child.stdout.on('data', (c: Buffer) => {
      if (stdout.length < 1 << 20) stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 1 << 16) stderr += c.toString();
    });
    const timer = setTimeout(
      () =>
        kill(
          new GitError(
            `git timed out after ${Math.round((opts.timeoutMs ?? DEFAULT_TIMEOUT) / 1000)} s`,
            'timeout',
          ),
        ),
      opts.timeoutMs ?? DEFAULT_TIMEOUT,
    );
    const onAbort = () => kill(new GitError('git was canceled', 'aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();
    let ticking = false;
    const ticker = opts.onTick
      ? setInterval(() => {
          if (ticking) return;
          ticking = true;
          opts.onTick!()
            .then(
              (problem) => {
                if (problem) kill(new GitError(problem, 'too_large'));
              },
              () => {},
            )
            .finally(() => {
              ticking = false;
            });
        }, 250)
      : undefined;
    child.on('error', (e) => {
      clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      reject(new GitError(`could not run git: ${e.message}`, 'failed', { cause: e }));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      opts.signal?.removeEventListener('abort', onAbort);
      if (killedFor) return reject(killedFor);
      if (code === 0) return resolve(stdout);
      reject(
        new GitError(
          `git ${args.find((a) => !a.startsWith('-')) ?? ''} failed: ${cleanStderr(stderr)}`,
          'failed',
          { exitCode: code ?? undefined },
        ),
      );
    });
  });
}

function cleanStderr(s: string): string {
  const lines = redactUrls(s)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('Cloning into') && !l.startsWith('hint:'));
  const text = lines.join('; ');
  return text.length > 500 ? `${text.slice(0, 497)}...` : text || 'no output';
}

/** Bytes on disk under dir (files only, symlinks not followed). */
export async function treeSize(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string) => {
    let names: string[];
    try {
      names = await readdir(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      let st;
      try {
        st = await lstat(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) await walk(p);
      else total += st.size;
    }
  };
  await walk(dir);
  return total;
}

export async function shallowClone(opts: CloneOptions): Promise<CloneResult> {
  const u = checkRepoUrl(opts.url);
  if (!u.ok) throw new GitError(`repo_url: ${u.reason}`, 'invalid');
  const r = checkRef(opts.ref);
  if (!r.ok) throw new GitError(`ref: ${r.reason}`, 'invalid');
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX;
  await runGit(
    ['clone', '--depth', '1', '--single-branch', '--no-tags', '--branch', opts.ref, '--', opts.url, opts.dir],
    {
      env: opts.env,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      onTick: async () => {
        const size = await treeSize(opts.dir);
        return size > maxBytes ? `repository is larger than ${maxBytes} bytes` : null;
      },
    },
  );
  const size = await treeSize(opts.dir);
  if (size > maxBytes) throw new GitError(`repository is larger than ${maxBytes} bytes`, 'too_large');
  const out = await runGit(['log', '-1', '--format=%H%n%s'], { cwd: opts.dir, timeoutMs: 10_000 });
  const [commit, ...subject] = out.split('\n');
  return { commit: commit.trim(), subject: subject.join('\n').trim() };
}

/** Clones into a fresh temporary directory, runs fn, and always removes the directory. */
export async function withTempClone<T>(
  opts: Omit<CloneOptions, 'dir'>,
  fn: (dir: string, clone: CloneResult) => Promise<T>,
): Promise<T> {
  const base = await mkdtemp(join(tmpdir(), 'svc-clone-'));
  try {
    const dir = join(base, 'repo');
    const clone = await shallowClone({ ...opts, dir });
    return await fn(dir, clone);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
