// A private OpenSSH server on loopback serving bare repositories through git-shell, for tests of
// deploy keys. Its own config, host keys and authorized_keys live in a temp dir on a free port. As
// root it logs in a dedicated `svcgit` user whose login shell is git-shell (created once, left in
// place); without root, sshd can only log in the user running it, so ForceCommand puts git-shell
// in front instead. needSshd skips loudly where sshd cannot run, and fails under CI.
import type { TestContext } from 'node:test';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { access, chmod, mkdir, mkdtemp, rm, writeFile, constants } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './net.js';
import { componentRequired, missing } from './ci.js';

export const run = promisify(execFile);
// SVC_TEST_SSHD names another binary (a path that does not exist plays a machine without sshd).
const SSHD = process.env.SVC_TEST_SSHD || '/usr/sbin/sshd';
const GIT_USER = 'svcgit';
export const sshdRequired = componentRequired('SVC_REQUIRE_SSHD');
const isRoot = process.getuid?.() === 0;

export async function sshdUsable(): Promise<string | null> {
  try {
    await access(SSHD, constants.X_OK);
    await access('/usr/bin/git-shell', constants.X_OK);
    await run('ssh-keygen', ['-?']).catch((e: { code?: unknown }) => {
      if (e.code === 'ENOENT') throw e;
    });
  } catch {
    return `${SSHD}, ssh-keygen or /usr/bin/git-shell is missing (Debian: apt-get install openssh-server openssh-client git)`;
  }
  return null;
}

/** Call first: skips (loudly) where sshd cannot run, or fails under CI. */
export async function needSshd(t: TestContext): Promise<boolean> {
  const problem = await sshdUsable();
  if (!problem) return true;
  return missing(t, `sshd cannot run here: ${problem}`, 'SVC_REQUIRE_SSHD');
}

export interface Sshd {
  port: number;
  user: string;
  /** Directory of the bare repositories; URLs are ssh://user@127.0.0.1:port<reposDir>/<name>.git */
  reposDir: string;
  url(repo: string): string;
  authorize(publicKeys: string[]): Promise<void>;
  /** Restarts the server with freshly generated host keys (a "changed host key"). */
  rotateHostKey(): Promise<void>;
  /** Everything sshd printed (-e), for diagnosing a failure. */
  log(): string;
  stop(): Promise<void>;
}

async function ensureGitUser(): Promise<{ user: string; home: string }> {
  if (!isRoot) {
    const me = userInfo();
    return { user: me.username, home: me.homedir };
  }
  try {
    await run('id', ['-u', GIT_USER]);
  } catch {
    // "*" rather than useradd's locked "!": with UsePAM no, sshd refuses locked accounts even
    // for public keys.
    await run('useradd', [
      '--system',
      '--create-home',
      '--home-dir',
      `/home/${GIT_USER}`,
      '--shell',
      '/usr/bin/git-shell',
      '--password',
      '*',
      GIT_USER,
    ]);
  }
  await mkdir(`/home/${GIT_USER}`, { recursive: true });
  return { user: GIT_USER, home: `/home/${GIT_USER}` };
}

export async function startSshd(): Promise<Sshd> {
  const { user, home } = await ensureGitUser();
  const dir = await mkdtemp(join(tmpdir(), 'svc-sshd-'));
  // sshd reads authorized_keys as the target user; host keys stay 0600 (root-readable only).
  await chmod(dir, 0o755);
  const reposDir = isRoot ? await mkdtemp(join(home, 'svc-test-')) : join(dir, 'repos');
  await mkdir(reposDir, { recursive: true });
  if (isRoot) await mkdir('/run/sshd', { recursive: true, mode: 0o755 }); // privilege separation dir
  const port = await freePort();
  const authorizedKeys = join(dir, 'authorized_keys');
  await writeFile(authorizedKeys, '', { mode: 0o644 });
  const config = join(dir, 'sshd_config');
  let child: ChildProcess | undefined;
  let output = '';
  let generation = 0;

  async function writeHostKey() {
    generation += 1;
    const key = join(dir, `host_ed25519_${generation}`);
    await run('ssh-keygen', [
      '-q',
      '-t',
      'ed25519',
      '-N',
      '',
      '-C',
      `svc-test-host-${generation}`,
      '-f',
      key,
    ]);
    await writeFile(
      config,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${key}`,
        `PidFile ${join(dir, 'sshd.pid')}`,
        'UsePAM no',
        `AuthorizedKeysFile ${authorizedKeys}`,
        'StrictModes no',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        `AllowUsers ${user}`,
        'AllowTcpForwarding no',
        'AllowAgentForwarding no',
        'X11Forwarding no',
        'PermitTTY no',
        'PrintMotd no',
        'LogLevel VERBOSE',
        ...(isRoot ? [] : ['ForceCommand /usr/bin/git-shell -c "$SSH_ORIGINAL_COMMAND"']),
        '',
      ].join('\n'),
    );
  }

  async function start() {
    child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (c: Buffer) => {
      if (output.length < 1 << 20) output += c.toString();
    });
    const exited = new Promise<never>((_, reject) =>
      child!.once('exit', (code) => reject(new Error(`sshd exited (${code}): ${output.slice(-2000)}`))),
    );
    const deadline = Date.now() + 15_000;
    for (;;) {
      const up = await Promise.race([
        exited,
        new Promise<boolean>((resolve) => {
          const s = connect(port, '127.0.0.1');
          s.once('data', () => {
            s.destroy();
            resolve(true);
          }); // the SSH-2.0 banner
          s.once('error', () => resolve(false));
        }),
      ]);
      if (up) break;
      if (Date.now() > deadline) throw new Error(`sshd did not start: ${output.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    exited.catch(() => {});
  }

  async function stopChild() {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await gone;
  }

  await writeHostKey();
  try {
    await start();
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    if (isRoot) await rm(reposDir, { recursive: true, force: true });
    throw e;
  }

  return {
    port,
    user,
    reposDir,
    url: (repo) => `ssh://${user}@127.0.0.1:${port}${reposDir}/${repo}.git`,
    async authorize(keys) {
      await writeFile(authorizedKeys, keys.map((k) => `${k}\n`).join(''), { mode: 0o644 });
    },
    async rotateHostKey() {
      await stopChild();
      await writeHostKey();
      await start();
    },
    log: () => output,
    async stop() {
      await stopChild();
      await rm(dir, { recursive: true, force: true });
      if (isRoot) await rm(reposDir, { recursive: true, force: true });
    },
  };
}

/** A bare repository owned by the git user, with one commit on `branch`. */
export async function makeBareRepo(
  sshd: Sshd,
  name: string,
  files: Record<string, string>,
  branch = 'main',
): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'svc-sshrepo-'));
  try {
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    };
    const git = (...args: string[]) => run('git', ['-C', work, ...args], { env });
    await git('init', '-q', '-b', branch);
    for (const [p, content] of Object.entries(files)) await writeFile(join(work, p), content);
    await git('add', '-A');
    await git('commit', '-q', '-m', `initial ${name}`);
    const bare = join(sshd.reposDir, `${name}.git`);
    await run('git', ['clone', '-q', '--bare', '--', work, bare]);
    // upload-pack runs as the git user; git refuses repositories owned by someone else.
    if (isRoot) await run('chown', ['-R', `${sshd.user}:`, sshd.reposDir]);
    const { stdout } = await git('rev-parse', 'HEAD');
    return stdout.trim();
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
