// A real git remote on loopback: `git daemon` serving repositories the tests write.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { freePort, waitListening } from './net.js';

const run = promisify(execFile);

export interface GitServer {
  base: string;
  port: number;
  url(name: string): string;
  /** Creates (first call) or updates a repository with these files on `main`; returns the commit. */
  commit(name: string, files: Record<string, string>, message?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startGitServer(): Promise<GitServer> {
  const base = await mkdtemp(join(tmpdir(), 'svc-git-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    'git',
    [
      'daemon',
      '--export-all',
      `--base-path=${base}`,
      '--reuseaddr',
      `--port=${port}`,
      '--listen=127.0.0.1',
      '--informative-errors',
      base,
    ],
    { stdio: 'ignore' },
  );
  await waitListening(port);
  const git = (cwd: string, ...args: string[]) =>
    run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd });
  return {
    base,
    port,
    url: (name) => `git://127.0.0.1:${port}/${name}`,
    async commit(name, files, message = 'update') {
      const dir = join(base, name);
      await mkdir(dir, { recursive: true });
      await git(dir, 'init', '-q', '-b', 'main').catch(() => {});
      for (const [path, content] of Object.entries(files)) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), content);
      }
      await git(dir, 'add', '-A');
      await git(dir, 'commit', '-q', '--allow-empty', '-m', message);
      return (await git(dir, 'rev-parse', 'HEAD')).stdout.trim();
    },
    async stop() {
      child.kill('SIGKILL');
      await rm(base, { recursive: true, force: true });
    },
  };
}
