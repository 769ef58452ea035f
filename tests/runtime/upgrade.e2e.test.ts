// Upgrades keep a way back: a real `svc serve` on a database one migration behind first writes a
// consistent copy named for the version that wrote it, then migrates; `svc rollback-upgrade`
// refuses while a service answers, and otherwise puts the copy back and keeps the upgraded one.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { openDb } from '#lib/db/index.js';
import { Migrator } from '#lib/db/kysely.js';
import { migrations } from '#lib/db/migrations/index.js';
import { recordVersion } from '#lib/db/upgrade.js';
import { productVersion } from '#lib/version.js';
import { serve, runCli } from '../_support/cli.js';
import { poll } from '../_support/wait.js';
import { TEST_MASTER_KEY } from '../_support/server.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const names = Object.keys(migrations).sort();
const applied = (file: string) => {
  const raw = new BetterSqlite3(file, { readonly: true });
  try {
    return (
      raw.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>
    ).map((r) => r.name);
  } finally {
    raw.close();
  }
};

/** A data directory whose database an older version (0.0.9, one migration behind) wrote. */
async function olderData(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-upgrade-'));
  dirs.push(dir);
  const db = openDb(dir);
  const r = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateTo(
    names[names.length - 2]!,
  );
  assert.equal(r.error, undefined);
  await db.destroy();
  recordVersion(dir, '0.0.9');
  return dir;
}

const vars = (dir: string) => ({
  SVC_DATA_DIR: dir,
  SVC_MASTER_KEY: TEST_MASTER_KEY,
  SVC_PROXY: 'off',
  SVC_ACCESS_LOG: join(dir, 'access.log'),
  SVC_SECURITY_DIR: join(dir, 'security'),
});

test('a start with pending migrations keeps a copy first; rollback-upgrade waits for the stop, then puts it back', async () => {
  const dir = await olderData();
  const svc = await serve(vars(dir));
  const port = new URL(svc.url).port;
  try {
    const copy = join(dir, 'pre-upgrade-0.0.9.db');
    assert.equal((await stat(copy)).mode & 0o777, 0o600);
    assert.deepEqual(applied(copy), names.slice(0, -1), 'the copy is the database as 0.0.9 left it');
    assert.deepEqual(applied(join(dir, 'svc.db')), names, 'the service migrated');
    assert.equal((await readFile(join(dir, 'svc.version'), 'utf8')).trim(), productVersion());
    // Boot notices follow the "listening" line.
    await poll(
      'the start to say it kept a copy',
      () => svc.lines.find((l) => typeof l.msg === 'string' && l.msg.includes('svc rollback-upgrade')),
      10_000,
      20,
    );

    const refused = await runCli(['rollback-upgrade'], {
      ...vars(dir),
      SVC_HOST: '127.0.0.1',
      SVC_PORT: port,
    });
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /stop it first/);
    assert.deepEqual(applied(join(dir, 'svc.db')), names, 'nothing changed while it ran');
  } finally {
    await svc.stop();
  }

  const r = await runCli(['rollback-upgrade'], { ...vars(dir), SVC_HOST: '127.0.0.1', SVC_PORT: port });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /install version 0\.0\.9/);
  assert.deepEqual(applied(join(dir, 'svc.db')), names.slice(0, -1), 'the old database is back');
  assert.equal((await stat(join(dir, 'svc.db'))).mode & 0o777, 0o600);
  assert.equal((await readFile(join(dir, 'svc.version'), 'utf8')).trim(), '0.0.9');
  const kept = (await readdir(dir)).filter(
    (f) => /^svc\.db\.upgraded-[^-]/.test(f) && !/-(wal|shm)$/.test(f),
  );
  assert.equal(kept.length, 1, 'the upgraded database is kept, not deleted');
  assert.deepEqual(applied(join(dir, kept[0]!)), names);
});

test('a new database or one already current keeps no copy', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-upgrade-'));
  dirs.push(dir);
  for (let i = 0; i < 2; i++) {
    const svc = await serve(vars(dir));
    await svc.stop();
  }
  assert.deepEqual(
    (await readdir(dir)).filter((f) => f.startsWith('pre-upgrade-')),
    [],
  );
  const r = await runCli(['rollback-upgrade'], { ...vars(dir), SVC_PORT: '1' });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /nothing to roll back to/);
});

test('svc key show prints the key the service uses, with its warning apart on stderr', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-key-'));
  dirs.push(dir);
  const fromEnv = await runCli(['key', 'show'], { SVC_DATA_DIR: dir, SVC_MASTER_KEY: TEST_MASTER_KEY });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  assert.equal(fromEnv.stdout, TEST_MASTER_KEY + '\n', 'only the key on stdout');
  assert.match(fromEnv.stderr, /WARNING: this key opens every secret and every backup/);
  const none = await runCli(['key', 'show'], { SVC_DATA_DIR: dir });
  assert.equal(none.code, 1);
  assert.equal(none.stdout, '');
  assert.match(none.stderr, /no master key/);
  // A first start without SVC_MASTER_KEY generates the key file; the command reads that one.
  const svc = await serve({
    SVC_DATA_DIR: dir,
    SVC_PROXY: 'off',
    SVC_ACCESS_LOG: join(dir, 'access.log'),
    SVC_SECURITY_DIR: join(dir, 'security'),
  });
  await svc.stop();
  const fromFile = await runCli(['key', 'show'], { SVC_DATA_DIR: dir });
  assert.equal(fromFile.code, 0, fromFile.stderr);
  assert.equal(fromFile.stdout.trim(), (await readFile(join(dir, 'master.key'), 'utf8')).trim());
  assert.equal((await runCli(['key', 'print'], { SVC_DATA_DIR: dir })).code, 2);
});
