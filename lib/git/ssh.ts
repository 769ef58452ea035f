// Git over SSH with an app's own deploy key. The key exists on disk only for the duration of one
// git run, in a fresh 0700 directory, as a 0600 file, and is removed afterwards whatever happens.
// Host keys go to the app's own known_hosts: the first connection records the server's key
// (accept-new), a later change is refused.
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { GitError, SAFE_CONFIG, gitEnv } from './clone.js';
import { checkRepoUrl, redactUrls } from './validate.js';
import { sshCommand } from './sshcmd.js';

export { sshCommand, anonymousSshCommand } from './sshcmd.js';

export interface DeployKeyPaths {
  dir: string;
  keyFile: string;
}

/**
 * Writes the key to a fresh temporary directory, runs fn with the environment git needs
 * (GIT_SSH_COMMAND and no prompts), and always removes the key and its directory afterwards.
 * The known_hosts file's directory is created (0700) when missing, so accept-new can record.
 */
export async function withDeployKey<T>(
  privateKey: string,
  knownHostsFile: string,
  fn: (env: Record<string, string>, paths: DeployKeyPaths) => Promise<T>,
): Promise<T> {
  if (
    typeof privateKey !== 'string' ||
    !/^-----BEGIN OPENSSH PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END OPENSSH PRIVATE KEY-----\n?$/.test(
      privateKey,
    )
  ) {
    throw new GitError('deploy key is not an OpenSSH private key', 'invalid');
  }
  if (!isAbsolute(knownHostsFile)) throw new GitError('known_hosts path must be absolute', 'invalid');
  const dir = await mkdtemp(join(tmpdir(), 'svc-key-'));
  try {
    const keyFile = join(dir, 'id_ed25519');
    const command = sshCommand(keyFile, knownHostsFile);
    await mkdir(dirname(knownHostsFile), { recursive: true, mode: 0o700 });
    // ssh refuses a key with a missing final newline on some versions, and any group/other access.
    await writeFile(keyFile, privateKey.endsWith('\n') ? privateKey : `${privateKey}\n`, {
      mode: 0o600,
      flag: 'wx',
    });
    return await fn(
      { GIT_SSH_COMMAND: command, GIT_SSH_VARIANT: 'ssh', GIT_TERMINAL_PROMPT: '0' },
      { dir, keyFile },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface ConnectionResult {
  ok: boolean;
  message: string;
}

const MAX_MESSAGE = 400;

/**
 * `git ls-remote` against the repository with the deploy key. Never throws for a failed
 * connection: the answer is {ok: false, message} with the server's words, cleaned.
 */
export async function testConnection(opts: {
  url: string;
  privateKey: string;
  knownHostsFile: string;
  timeoutMs?: number;
}): Promise<ConnectionResult> {
  const u = checkRepoUrl(opts.url);
  if (!u.ok) return { ok: false, message: `repository URL: ${u.reason}` };
  const host = sshHost(opts.url);
  if (host === null)
    return { ok: false, message: 'deploy keys are used only with ssh:// or user@host:path repository URLs' };
  let result: { code: number | null; stdout: string; stderr: string; timedOut: boolean };
  try {
    result = await withDeployKey(opts.privateKey, opts.knownHostsFile, (env) =>
      lsRemote(opts.url, env, opts.timeoutMs ?? 20_000),
    );
  } catch (e) {
    return { ok: false, message: cleanMessage(e instanceof Error ? e.message : String(e)) };
  }
  if (result.timedOut)
    return {
      ok: false,
      message: `no answer from ${host} within ${Math.round((opts.timeoutMs ?? 20_000) / 1000)} s`,
    };
  if (result.code === 0) {
    const refs = result.stdout.split('\n').filter((l) => /^[0-9a-f]{40,64}\t/.test(l));
    const heads = refs.filter((l) => l.includes('\trefs/heads/')).length;
    const tags = refs.filter((l) => l.includes('\trefs/tags/') && !l.endsWith('^{}')).length;
    return {
      ok: true,
      message: `connected to ${host}: the key is accepted (${heads} branch${heads === 1 ? '' : 'es'}, ${tags} tag${tags === 1 ? '' : 's'})`,
    };
  }
  return { ok: false, message: explainFailure(result.stderr, host) };
}

/** Turns ssh/git stderr into one clear sentence; the known cases first, then the cleaned text. */
export function explainFailure(stderr: string, host: string): string {
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/i.test(stderr)) {
    return `host key for ${host} changed since it was first recorded; refusing to connect (possible man-in-the-middle; if the server's key was replaced on purpose, reset this app's known hosts)`;
  }
  if (/Host key verification failed/i.test(stderr))
    return `host key for ${host} could not be verified; refusing to connect`;
  const cleaned = cleanMessage(
    stderr
      .split('\n')
      .filter(
        (l) =>
          !/^Warning: Permanently added/.test(l) &&
          !/^fatal: Could not read from remote repository/.test(l) &&
          !/^Please make sure you have the correct access rights/.test(l) &&
          !/^and the repository exists/.test(l),
      )
      .join('\n'),
  );
  if (/Permission denied \(/i.test(stderr))
    return `${host} refused the deploy key (add the public key to the repository's deploy keys): ${cleaned}`;
  return cleaned || 'git ls-remote failed without a message';
}

/**
 * Control characters and terminal escapes out (a hostile server's banner must not drive the
 * dashboard's terminal or the log viewer), lines joined with "; ", length bounded.
 */
export function cleanMessage(text: string, max = MAX_MESSAGE): string {
  const s = redactUrls(text.slice(0, 64 * 1024))
    // CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and other two-byte escapes.
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g, '')
    .replace(/\u001b[@-_]/g, '')
    .replace(/\u009b[0-?]*[ -/]*[@-~]/g, '')
    .split(/\r?\n|\r/)
    .map((l) =>
      l
        .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .filter((l) => l && !/^@+$/.test(l))
    .join('; ');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Host of an ssh:// or scp-like URL (with its port when given); null for other transports. */
export function sshHost(url: string): string | null {
  if (/^ssh:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      return u.port ? `${u.hostname}:${u.port}` : u.hostname;
    } catch {
      return null;
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return null;
  const scp = /^(?:[^@/]+@)?([^:/]+|\[[^\]]+\]):/.exec(url);
  return scp ? scp[1]! : null;
}

function lsRemote(
  url: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    // Own process group, so a timeout kills ssh too, not only git.
    const child = spawn('git', [...SAFE_CONFIG, 'ls-remote', '--', url], {
      env: gitEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (c: Buffer) => {
      if (stdout.length < 1 << 20) stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 1 << 16) stderr += c.toString();
    });
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: `could not run git: ${e.message}`, timedOut: false });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}
