// A real git remote on loopback (git daemon), so URL validation and the CLI path run for real.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, writeFile, rm, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shallowClone, withTempClone, detectCompose, envExample, GitError } from '#lib/git/index.js';
import { freePort } from '../_support/net.js';

const run = promisify(execFile);
let root = '';
let daemon: ChildProcess | undefined;
let port = 0;

async function makeRepo(
  name: string,
  files: Record<string, string | Buffer>,
  branch = 'main',
): Promise<void> {
  const work = join(root, 'work', name);
  await mkdir(work, { recursive: true });
  const git = (...args: string[]) =>
    run('git', ['-C', work, ...args], {
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@t',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@t',
      },
    });
  await git('init', '-q', '-b', branch);
  for (const [p, content] of Object.entries(files)) {
    await mkdir(join(work, p, '..'), { recursive: true });
    await writeFile(join(work, p), content);
  }
  await git('add', '-A');
  await git('commit', '-q', '-m', `initial ${name}`);
  await run('git', ['clone', '-q', '--bare', '--', work, join(root, 'srv', `${name}.git`)]);
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-git-'));
  await mkdir(join(root, 'srv'));
  await makeRepo('compose-app', {
    'compose.yaml': 'services:\n  web:\n    image: svc-test/busybox:latest\n  worker:\n    build: .\n',
    'docker-compose.yml': 'services:\n  ignored:\n    image: x\n',
    Dockerfile: 'FROM svc-test/busybox:latest\n',
    '.env.example': '# settings\nexport PORT=8080\nSECRET="change me"\nEMPTY=\n',
  });
  await makeRepo(
    'dockerfile-app',
    { Dockerfile: 'FROM svc-test/busybox:latest\nCMD ["sleep","1"]\n', 'env.example': 'A=1\n' },
    'release/1.x',
  );
  await makeRepo('empty-app', { 'README.md': 'nothing here\n' });
  await makeRepo('big-app', { 'blob.bin': Buffer.alloc(3 * 1024 * 1024, 7) });
  port = await freePort();
  daemon = spawn(
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--export-all',
      `--base-path=${join(root, 'srv')}`,
      '--listen=127.0.0.1',
      `--port=${port}`,
      '--',
      join(root, 'srv'),
    ],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await run('git', ['ls-remote', '--', `git://127.0.0.1:${port}/compose-app.git`], { timeout: 5000 });
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
});

after(async () => {
  daemon?.kill('SIGTERM');
  if (root) await rm(root, { recursive: true, force: true });
});

test('shallow clone of a branch returns commit and subject; detect-compose and env-example read it', async () => {
  let seenDir = '';
  const out = await withTempClone(
    { url: `git://127.0.0.1:${port}/compose-app.git`, ref: 'main', timeoutMs: 60_000 },
    async (dir, clone) => {
      seenDir = dir;
      assert.match(clone.commit, /^[0-9a-f]{40}$/);
      assert.equal(clone.subject, 'initial compose-app');
      const { stdout } = await run('git', ['-C', dir, 'rev-list', '--count', 'HEAD']);
      assert.equal(stdout.trim(), '1', 'depth 1');
      return { detection: await detectCompose(dir), env: await envExample(dir) };
    },
  );
  assert.equal(out.detection.compose_path, 'compose.yaml', 'compose.yaml wins over docker-compose.yml');
  assert.deepEqual(out.detection.services, ['web', 'worker']);
  assert.equal(out.detection.dockerfile, null);
  assert.deepEqual(out.env, [
    { key: 'PORT', value: '8080' },
    { key: 'SECRET', value: 'change me' },
    { key: 'EMPTY', value: '' },
  ]);
  await assert.rejects(readdir(seenDir), { code: 'ENOENT' }, 'the temporary clone is removed');
});

test('a Dockerfile-only repository is a one-service stack; branch names with slashes work', async () => {
  const out = await withTempClone(
    { url: `git://127.0.0.1:${port}/dockerfile-app.git`, ref: 'release/1.x' },
    async (dir) => ({ d: await detectCompose(dir), e: await envExample(dir) }),
  );
  assert.deepEqual(out.d, { compose_path: null, dockerfile: 'Dockerfile', services: ['app'], findings: [] });
  assert.deepEqual(out.e, [{ key: 'A', value: '1' }]);
});

test('a repository with neither compose file nor Dockerfile says so', async () => {
  const d = await withTempClone({ url: `git://127.0.0.1:${port}/empty-app.git`, ref: 'main' }, (dir) =>
    detectCompose(dir),
  );
  assert.equal(d.compose_path, null);
  assert.equal(d.findings[0].level, 'error');
});

test('failures: unknown branch, unknown repo, over the size bound, canceled; the temp dir is always removed', async () => {
  const before = (await readdir(tmpdir())).filter((n) => n.startsWith('svc-clone-')).length;
  await assert.rejects(
    withTempClone({ url: `git://127.0.0.1:${port}/compose-app.git`, ref: 'nope' }, async () => 1),
    (e: unknown) => e instanceof GitError && e.kind === 'failed' && /nope/.test(e.message),
  );
  await assert.rejects(
    withTempClone({ url: `git://127.0.0.1:${port}/missing.git`, ref: 'main' }, async () => 1),
    (e: unknown) => e instanceof GitError && e.kind === 'failed',
  );
  await assert.rejects(
    withTempClone(
      { url: `git://127.0.0.1:${port}/big-app.git`, ref: 'main', maxBytes: 1024 * 1024 },
      async () => 1,
    ),
    (e: unknown) => e instanceof GitError && e.kind === 'too_large',
  );
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(
    withTempClone(
      { url: `git://127.0.0.1:${port}/compose-app.git`, ref: 'main', signal: ac.signal },
      async () => 1,
    ),
    (e: unknown) => e instanceof GitError && e.kind === 'aborted',
  );
  await assert.rejects(
    withTempClone({ url: `git://127.0.0.1:${port}/compose-app.git`, ref: 'main' }, async () => {
      throw new Error('fn failed');
    }),
    /fn failed/,
  );
  const afterCount = (await readdir(tmpdir())).filter((n) => n.startsWith('svc-clone-')).length;
  assert.equal(afterCount, before);
});

test('invalid URLs and refs never reach git', async () => {
  const dir = join(root, 'never');
  for (const [url, ref] of [
    [`git://127.0.0.1:${port}/compose-app.git`, '--upload-pack=touch /tmp/x'],
    [`git://127.0.0.1:${port}/compose-app.git`, 'main;id'],
    [`git://127.0.0.1:${port}/compose-app.git`, 'a..b'],
    [`git://127.0.0.1:${port}/compose-app.git`, 'main\n'],
    [`file://${join(root, 'srv', 'compose-app.git')}`, 'main'],
    [join(root, 'srv', 'compose-app.git'), 'main'],
    ['ext::sh -c id', 'main'],
    ['-u/x', 'main'],
    [`git://127.0.0.1:${port}/$(id).git`, 'main'],
  ]) {
    await assert.rejects(
      shallowClone({ url, ref, dir }),
      (e: unknown) => e instanceof GitError && e.kind === 'invalid',
      `${url} ${ref}`,
    );
  }
  await assert.rejects(readdir(dir), { code: 'ENOENT' });
});
