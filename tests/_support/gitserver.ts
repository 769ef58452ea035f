// A real git remote on loopback: `git daemon` serving bare repositories the tests create.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const run = promisify(execFile);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface GitServer {
  url(repo: string): string;
  /** Creates (or adds a commit to) a repository with these files on `branch`. */
  commit(repo: string, files: Record<string, string>, message?: string, branch?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startGitServer(): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), 'svc-git-'));
  const srv = join(root, 'srv');
  await mkdir(srv);
  const port = await freePort();
  const daemon: ChildProcess = spawn('git', ['daemon', '--reuseaddr', '--export-all', `--base-path=${srv}`, '--listen=127.0.0.1', `--port=${port}`, '--', srv], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((r) => {
      const c = connect(port, '127.0.0.1', () => {
        c.end();
        r(true);
      });
      c.on('error', () => r(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const git = (cwd: string, ...args: string[]) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd });
  return {
    url: (repo) => `git://127.0.0.1:${port}/${repo}.git`,
    async commit(repo, files, message = 'change', branch = 'main') {
      const bare = join(srv, `${repo}.git`);
      const work = join(root, 'work', repo);
      await mkdir(work, { recursive: true });
      try {
        await run('git', ['init', '--bare', '-q', '-b', branch, bare]);
        await run('git', ['init', '-q', '-b', branch, work]);
        await git(work, 'remote', 'add', 'origin', bare);
      } catch {
        /* exists already */
      }
      await git(work, 'checkout', '-q', '-B', branch);
      for (const [name, content] of Object.entries(files)) {
        await mkdir(dirname(join(work, name)), { recursive: true });
        await writeFile(join(work, name), content);
      }
      await git(work, 'add', '-A');
      await git(work, 'commit', '-q', '--allow-empty', '-m', message);
      await git(work, 'push', '-q', '-f', 'origin', `${branch}:${branch}`);
      return (await git(work, 'rev-parse', 'HEAD')).stdout.trim();
    },
    async stop() {
      daemon.kill('SIGTERM');
      await rm(root, { recursive: true, force: true });
    },
  };
}
