// `svc install` refuses to point a root service at code anyone but root can change, naming the
// path, and `svc doctor` says the same (lib/install/code-owner.ts). Real trees on the real file
// system (made and chowned as root), and the real CLI run from a checkout copied beside this one
// whose dist/ a user owns.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmod, chown, cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeProblems } from '#lib/install/code-owner.js';
import { missing } from '../../_support/ci.js';
import { cleanEnv } from '../../_support/cli.js';

const run = promisify(execFile);
/** This checkout (dist/tests/unit/install/ -> the repository). */
const REPO = fileURLToPath(new URL('../../../../', import.meta.url)).replace(/\/$/, '');
const NOBODY = 65534;
const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

/** Root, and a repository that root alone can change (else no tree below it can be clean). */
async function gate(t: Parameters<typeof missing>[0]): Promise<boolean> {
  if (process.getuid?.() !== 0) return missing(t, 'needs root (to chown the trees it makes)');
  const here = await codeProblems(REPO, 1);
  if (here.length) return missing(t, `this checkout is not root's alone: ${here[0]!.path} ${here[0]!.why}`);
  return true;
}

/** A checkout-shaped tree beside the repository's own files (its folders above are root's, 0755). */
async function tree(): Promise<string> {
  const dir = await mkdtemp(join(REPO, '.code-owner-'));
  dirs.push(dir);
  await chmod(dir, 0o755);
  await mkdir(join(dir, 'dist/runtime'), { recursive: true });
  await mkdir(join(dir, 'node_modules/left-pad/lib'), { recursive: true });
  await writeFile(join(dir, 'package.json'), '{}\n');
  await writeFile(join(dir, 'dist/runtime/cli.js'), '\n');
  await writeFile(join(dir, 'node_modules/left-pad/lib/index.js'), '\n');
  return dir;
}

test("a tree root alone can change passes; a user's file, a group-writable one, a writable checkout and a link to a user's file are each named", async (t) => {
  if (!(await gate(t))) return;
  const dir = await tree();
  assert.deepEqual(await codeProblems(dir), []);

  await chown(join(dir, 'dist/runtime'), NOBODY, NOBODY);
  assert.deepEqual(await codeProblems(dir), [
    { path: join(dir, 'dist/runtime'), why: `owned by uid ${NOBODY}` },
  ]);
  await chown(join(dir, 'dist/runtime'), 0, 0);

  await chmod(join(dir, 'node_modules/left-pad/lib/index.js'), 0o664);
  assert.deepEqual(await codeProblems(dir), [
    { path: join(dir, 'node_modules/left-pad/lib/index.js'), why: 'writable by its group' },
  ]);
  await chmod(join(dir, 'node_modules/left-pad/lib/index.js'), 0o644);

  await chmod(dir, 0o757);
  assert.deepEqual((await codeProblems(dir))[0], { path: dir, why: 'writable by every user' });
  await chmod(dir, 0o755);

  const outside = await mkdtemp(join(tmpdir(), 'svc-code-owner-'));
  dirs.push(outside);
  await writeFile(join(outside, 'evil.js'), '\n');
  await chown(join(outside, 'evil.js'), NOBODY, NOBODY);
  await mkdir(join(dir, 'node_modules/.bin'));
  await symlink(join(outside, 'evil.js'), join(dir, 'node_modules/.bin/tool'));
  assert.deepEqual(await codeProblems(dir), [
    { path: join(dir, 'node_modules/.bin/tool'), why: `owned by uid ${NOBODY}` },
  ]);
});

test('the real CLI from a checkout whose dist/ a user owns: install refuses naming the path (dry run too); doctor says so', async (t) => {
  if (!(await gate(t))) return;
  const dir = await mkdtemp(join(REPO, '.code-owner-cli-'));
  dirs.push(dir);
  await chmod(dir, 0o755);
  await cp(join(REPO, 'package.json'), join(dir, 'package.json'));
  await cp(join(REPO, 'dist'), join(dir, 'dist'), { recursive: true });
  await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  const cli = join(dir, 'dist/runtime/cli.js');
  const target = await mkdtemp(join(tmpdir(), 'svc-code-owner-root-'));
  dirs.push(target);
  const install = (args: string[]) =>
    run(process.execPath, [cli, 'install', '--root', target, ...args], { env: cleanEnv({}) }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );

  // Clean: the dry run plans its changes.
  const fine = await install(['--dry-run']);
  assert.equal(fine.code, 0, fine.stderr);

  await chown(join(dir, 'dist'), NOBODY, NOBODY);
  for (const args of [['--dry-run'], ['--yes']]) {
    const r = await install(args);
    assert.equal(r.code, 1, `${args}: ${r.stdout}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /refusing to make a root service of code others can change/);
    assert.ok(r.stderr.includes(`${join(dir, 'dist')} is owned by uid ${NOBODY}`), r.stderr);
  }
  const doctor = await run(process.execPath, [cli, 'doctor'], {
    env: cleanEnv({
      SVC_DATA_DIR: join(target, 'data'),
      SVC_PORT: '1',
      SVC_CADDY_ADMIN: 'http://127.0.0.1:1',
    }),
    timeout: 60_000,
  }).catch((e: { stdout: string }) => e);
  assert.match(
    doctor.stdout,
    new RegExp(
      `^error +code +root runs code others can change: ${join(dir, 'dist').replace(/\./g, '\\.')} is owned by uid ${NOBODY}`,
      'm',
    ),
  );
});
