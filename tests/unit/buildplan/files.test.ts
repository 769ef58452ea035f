// The checkout view: relative paths only, symlinks out of the checkout refused on a real disk and in
// memory alike, bounded reads and listings.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile, symlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detect, diskFiles, memoryFiles, PlanError, type RepoFiles } from '#lib/buildplan/index.js';
import { MAX_ENTRIES, MAX_READ } from '#lib/buildplan/files.js';

let root = '';
let outside = '';
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-buildplan-'));
  outside = await mkdtemp(join(tmpdir(), 'svc-buildplan-outside-'));
  await writeFile(join(outside, 'secret.json'), '{"scripts":{"start":"node leak.js"}}');
  await mkdir(join(root, 'src'));
  await writeFile(join(root, 'src', 'server.js'), 'hi');
  await symlink('src/server.js', join(root, 'inside-link.js'));
  await symlink(join(outside, 'secret.json'), join(root, 'package.json'));
  await symlink(outside, join(root, 'outdir'));
  await symlink('../../../../../../../../etc', join(root, 'etc'));
  await writeFile(join(root, 'big.txt'), Buffer.alloc(MAX_READ + 1, 97));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

async function refusedWith(p: Promise<unknown>, re: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof PlanError && re.test(e.message));
}

test('disk: files inside, symlinks inside followed', async () => {
  const f = diskFiles(root);
  assert.equal(await f.read('src/server.js'), 'hi');
  assert.equal(await f.read('inside-link.js'), 'hi');
  assert.equal(await f.exists('src'), true);
  assert.equal(await f.exists('nope.txt'), false);
  assert.equal(await f.read('nope.txt'), null);
  assert.equal(await f.read('src'), null, 'a directory is not read as a file');
  assert.deepEqual(
    (await f.list('')).map((e) => e.name),
    ['big.txt', 'etc', 'inside-link.js', 'outdir', 'package.json', 'src'],
  );
  assert.deepEqual(
    (await f.list('')).filter((e) => e.dir).map((e) => e.name),
    ['src'],
    'a symlinked folder is not reported as a folder',
  );
});

test('disk: a symlink out of the checkout is refused, never read (a package.json pointing at a host file)', async () => {
  const f = diskFiles(root);
  await refusedWith(f.read('package.json'), /package\.json: path resolves outside the repository/);
  await refusedWith(f.exists('package.json'), /outside the repository/);
  await refusedWith(f.read('outdir/secret.json'), /outside the repository/);
  await refusedWith(f.list('outdir'), /outside the repository/);
  await refusedWith(f.read('etc/passwd'), /outside the repository/);
  // Detection over the checkout stops there with the same reason instead of planning from the host file.
  await refusedWith(detect(f), /package\.json: path resolves outside the repository/);
});

test('paths: absolute, `..`, control characters and backslashes are refused before any lookup', async () => {
  for (const f of [diskFiles(root), memoryFiles({ 'a.txt': 'x' })] as RepoFiles[]) {
    await refusedWith(f.read('/etc/passwd'), /is absolute/);
    await refusedWith(f.read('../../etc/passwd'), /climbs out of the repository/);
    await refusedWith(f.read('src/../../x'), /climbs out/);
    await refusedWith(f.exists('a\nb'), /control character/);
    await refusedWith(f.read('a\\b'), /backslash/);
    await refusedWith(f.read(''), /not a plain relative path/);
  }
});

test('disk: reads are bounded (1 MiB, or less when asked)', async () => {
  const f = diskFiles(root);
  await refusedWith(f.read('big.txt'), /big\.txt: file is larger than 1048576 bytes/);
  await refusedWith(f.read('src/server.js', 1), /larger than 1 bytes/);
  assert.equal(await f.read('src/server.js', 2), 'hi');
});

test('disk: listings are bounded', async () => {
  const many = await mkdtemp(join(tmpdir(), 'svc-buildplan-many-'));
  try {
    await Promise.all(Array.from({ length: MAX_ENTRIES + 20 }, (_, i) => writeFile(join(many, `f${i}`), '')));
    assert.equal((await diskFiles(many).list('')).length, MAX_ENTRIES);
  } finally {
    await rm(many, { recursive: true, force: true });
  }
});

test('memory: the same rules, symlinks included', async () => {
  const f = memoryFiles({
    'src/app.js': 'x',
    'link.js': { symlink: 'src/app.js' },
    'sub/up.js': { symlink: '../src/app.js' },
    'escape.json': { symlink: '../../etc/passwd' },
    'abs.json': { symlink: '/etc/passwd' },
    loop: { symlink: 'loop' },
    'big.txt': 'a'.repeat(MAX_READ + 1),
  });
  assert.equal(await f.read('link.js'), 'x');
  assert.equal(await f.read('sub/up.js'), 'x');
  assert.equal(await f.exists('src'), true);
  assert.deepEqual(
    (await f.list('')).map((e) => [e.name, e.dir, e.link]),
    [
      ['abs.json', false, true],
      ['big.txt', false, false],
      ['escape.json', false, true],
      ['link.js', false, true],
      ['loop', false, true],
      ['src', true, false],
      ['sub', true, false],
    ],
  );
  await refusedWith(f.read('escape.json'), /outside the repository/);
  await refusedWith(f.read('abs.json'), /outside the repository/);
  await refusedWith(f.read('loop'), /too many levels of symlinks/);
  await refusedWith(f.read('big.txt'), /larger than/);
});
