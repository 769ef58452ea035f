// The database across versions: a data directory left at each earlier migration level (with
// rows in it) boots to the latest and keeps every row; a migration that fails is rolled back and
// the boot refuses, naming it; a corrupt file, a damaged one and one from a newer version are
// refused at boot by the real CLI with a readable reason, and nothing in them is overwritten.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, truncate, writeFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import type { MigrationProvider } from 'kysely';
import { openDb } from '#lib/db/index.js';
import { Migrator } from '#lib/db/kysely.js';
import { migrations } from '#lib/db/migrations/index.js';
import { loadConfig } from '#lib/config.js';
import { createEnv } from '../../../runtime/boot.js';
import { startServer } from '../../../runtime/server.js';
import { createLogger } from '#lib/log.js';
import { hashPassword } from '#lib/auth/passwords.js';
import { createSealer } from '#lib/crypto/seal.js';
import { newId } from '#lib/crypto/random.js';
import { envBinding } from '#lib/apps/env.js';
import { Client, ADMIN, TEST_MASTER_KEY } from '../../_support/server.js';

const CLI = fileURLToPath(new URL('../../../runtime/cli.js', import.meta.url));
const NAMES = Object.keys(migrations);
const provider: MigrationProvider = { getMigrations: async () => migrations };

async function dataDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-migrate-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A data directory whose database stopped at migration `level`. */
async function atLevel(dir: string, level: string): Promise<void> {
  const db = openDb(dir);
  const { error } = await new Migrator({ db, provider }).migrateTo(level);
  await db.destroy();
  if (error) throw error;
}

/** Rows of every kind that exists at that level, written the way that version wrote them. */
async function seed(dir: string, level: number): Promise<{ appId: string; depId: string }> {
  const raw = new BetterSqlite3(join(dir, 'svc.db'));
  const at = '2024-05-01T10:00:00.000Z';
  const appId = newId(Date.parse(at));
  const depId = newId(Date.parse(at) + 1);
  try {
    raw
      .prepare(
        'insert into users (id, username, password_hash, totp_enabled, created_at, updated_at) values (?, ?, ?, 0, ?, ?)',
      )
      .run(newId(), ADMIN.username, await hashPassword(ADMIN.password, 14), at, at);
    raw.prepare("insert into settings (key, value) values ('deploy_concurrency', '3')").run();
    raw
      .prepare(
        "insert into audit (at, actor, via, action, target, outcome) values (?, 'admin', 'session', 'legacy.action', 'x', 1)",
      )
      .run(at);
    // As versions before the contract's entry shape wrote them: an event name, a route with `:id`.
    raw
      .prepare(
        "insert into audit (at, actor_id, actor, via, action, target, outcome) values (?, 'u1', 'admin', 'token', 'auth.api_token_revoked', 'tok1', 204)",
      )
      .run(at);
    raw
      .prepare(
        "insert into audit (at, actor_id, actor, via, action, target, outcome) values (?, 'u1', 'admin', 'session', 'POST /api/apps/:id/deploy-now', ?, 500)",
      )
      .run(at, JSON.stringify({ id: 'app1' }));
    if (level >= 2) {
      raw
        .prepare(
          "insert into apps (id, name, source, status, created_at, updated_at) values (?, 'legacy-app', ?, 'running', ?, ?)",
        )
        .run(appId, JSON.stringify({ type: 'image', image: 'svc-test/busybox:latest' }), at, at);
      const sealer = createSealer(Buffer.from(TEST_MASTER_KEY, 'hex'));
      raw
        .prepare('insert into app_env (app_id, key, secret, sealed) values (?, ?, 0, ?)')
        .run(appId, 'MODE', sealer.seal('legacy value', envBinding(appId, 'MODE')));
      raw
        .prepare(
          "insert into app_services (app_id, name, port, health_path) values (?, 'app', 8080, '/health')",
        )
        .run(appId);
      raw
        .prepare(
          "insert into deployments (id, app_id, status, trigger, ref, images, created_at, started_at, finished_at, updated_at) values (?, ?, 'succeeded', 'manual', null, ?, ?, ?, ?, ?)",
        )
        .run(depId, appId, JSON.stringify({ app: 'svc-test/busybox:latest' }), at, at, at, at);
      raw
        .prepare("insert into deployment_events (deployment_id, status, at) values (?, 'succeeded', ?)")
        .run(depId, at);
      raw
        .prepare(
          "insert into deployment_logs (deployment_id, seq, at, stream, line) values (?, 1, ?, 'deploy', 'legacy line')",
        )
        .run(depId, at);
    }
    if (level >= 3)
      raw
        .prepare('update deployments set spec = ? where id = ?')
        .run(JSON.stringify({ kind: 'image', image: 'svc-test/busybox:latest' }), depId);
    // From 0011 on, a version wrote the route and the actor's kind beside the event.
    if (level >= 11) {
      const set = raw.prepare('update audit set route = ?, actor_type = ? where action = ?');
      set.run(null, 'user', 'legacy.action');
      set.run('DELETE /api/auth/api-tokens/{id}', 'token', 'auth.api_token_revoked');
      set.run('POST /api/apps/{id}/deploy-now', 'user', 'POST /api/apps/:id/deploy-now');
    }
  } finally {
    raw.close();
  }
  return { appId, depId };
}

/** Schema and every row, to show a refused database was left as it was. */
function dump(dir: string): string {
  const raw = new BetterSqlite3(join(dir, 'svc.db'), { readonly: true });
  try {
    const tables = raw.prepare('select name, sql from sqlite_master order by type, name').all() as {
      name: string;
      sql: string | null;
    }[];
    const rows = tables
      .filter((x) => x.sql?.startsWith('CREATE TABLE'))
      .map((x) => [x.name, raw.prepare(`select * from "${x.name}"`).all()]);
    return JSON.stringify({ tables, rows });
  } finally {
    raw.close();
  }
}

const sha = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

/** Boots the real CLI on the directory; it must refuse. Returns its stderr. */
function refusedBoot(dir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, 'serve'],
      {
        timeout: 60_000,
        env: {
          PATH: process.env.PATH,
          SVC_DATA_DIR: dir,
          SVC_HOST: '127.0.0.1',
          SVC_PORT: '0',
          SVC_MASTER_KEY: TEST_MASTER_KEY,
          SVC_LOG_LEVEL: 'warn',
          SVC_ACCESS_LOG: join(dir, 'access.log'),
        },
      },
      (err, _stdout, stderr) => {
        if (!err) return reject(new Error(`the server started on a database it should refuse: ${stderr}`));
        if ((err as { killed?: boolean }).killed)
          return reject(new Error(`the server neither refused nor stopped: ${stderr}`));
        assert.equal((err as { code?: unknown }).code, 1, stderr);
        resolve(stderr);
      },
    );
  });
}

for (const [i, level] of NAMES.slice(0, -1).entries()) {
  test(`a database left at ${level}, with rows, boots to the latest migration and keeps them`, async (t) => {
    const dir = await dataDir(t);
    await atLevel(dir, level);
    const { appId, depId } = await seed(dir, i + 1);
    const config = loadConfig({
      SVC_DATA_DIR: dir,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: '0',
      SVC_MASTER_KEY: TEST_MASTER_KEY,
      SVC_LOG_LEVEL: 'silent',
      SVC_ACCESS_LOG: join(dir, 'access.log'),
    });
    const env = await createEnv(config, { log: createLogger('silent') });
    const running = await startServer(env);
    try {
      const applied = (await env.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .orderBy('name' as never)
        .execute()) as { name: string }[];
      assert.deepEqual(
        applied.map((r) => r.name),
        NAMES,
      );
      const c = new Client(running.url);
      const login = await c.req('POST', '/api/auth/login', ADMIN);
      assert.equal(login.status, 200, `the operator of that version still logs in: ${login.text}`);
      assert.equal((await c.req('GET', '/api/instance/deploy-concurrency')).body.concurrency, 3);
      if (i + 1 >= 2) {
        // The row keeps what that version stored; the API's answer is then derived from the engine,
        // where no container of this app runs.
        const stored = await env.db
          .selectFrom('apps')
          .select('status')
          .where('id', '=', appId)
          .executeTakeFirstOrThrow();
        assert.equal(stored.status, 'running');
        const apps = (await c.req('GET', '/api/apps')).body.items as {
          id: string;
          name: string;
          status: string;
        }[];
        assert.deepEqual(
          apps.map((a) => [a.id, a.name]),
          [[appId, 'legacy-app']],
        );
        assert.deepEqual((await c.req('GET', `/api/apps/${appId}/env`)).body.items, [
          { key: 'MODE', secret: false, value: 'legacy value' },
        ]);
        const deps = (await c.req('GET', `/api/apps/${appId}/deployments`)).body.items as {
          id: string;
          status: string;
        }[];
        assert.deepEqual(
          deps.map((d) => [d.id, d.status]),
          [[depId, 'succeeded']],
        );
        assert.deepEqual(
          (await c.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`)).body.items.map(
            (l: { line: string }) => l.line,
          ),
          ['legacy line'],
        );
        // Columns added later take their defaults: the old deployment is not "waiting".
        const row = await env.db
          .selectFrom('deployments')
          .select(['waiting', 'spec'])
          .where('id', '=', depId)
          .executeTakeFirstOrThrow();
        assert.equal(row.waiting, 0);
        assert.equal(row.spec === null, i + 1 < 3);
      }
      const audit = (await c.req('GET', '/api/audit?limit=50')).body.items as any[];
      assert.ok(
        audit.some((a) => a.event === 'legacy.action' && a.action === 'SYSTEM legacy.action'),
        'the audit feed kept its old entries',
      );
      // Old entries read in the contract's shape: the route their event came from, the actor's kind.
      const revoked = audit.find((a) => a.event === 'auth.api_token_revoked');
      assert.equal(revoked.action, 'DELETE /api/auth/api-tokens/{id}');
      assert.equal(revoked.actor.type, 'token');
      assert.deepEqual(revoked.target, { type: 'api_token', id: 'tok1' });
      assert.equal(revoked.outcome, 'ok');
      const deploy = audit.find((a) => a.action === 'POST /api/apps/{id}/deploy-now');
      assert.deepEqual(
        [deploy.actor, deploy.target, deploy.outcome, deploy.event],
        [{ type: 'user', id: 'u1', name: 'admin' }, { type: 'app', id: 'app1' }, 'error', null],
      );
    } finally {
      await running.close();
    }
  });
}

test('a migration that fails is rolled back: the boot refuses, naming it, and the database is as it was', async (t) => {
  const dir = await dataDir(t);
  await atLevel(dir, '0002_apps_deployments');
  await seed(dir, 2);
  // An object in the way of 0003 (its index name), as a hand edit or a broken copy might leave.
  const raw = new BetterSqlite3(join(dir, 'svc.db'));
  raw.prepare('create index deployments_status on deployments (status)').run();
  raw.close();
  const before = dump(dir);
  const stderr = await refusedBoot(dir);
  assert.match(
    stderr,
    /^svc serve: migration 0003_deploy_queue of \S+svc\.db failed, and every migration of this boot was rolled back \(.*deployments_status.*\); it was left as it is: restore it from a backup, or move it away to start with an empty one\n$/,
  );
  assert.equal(dump(dir), before, 'no column, index or row of the failed migration is left');
});

test('a corrupt, a damaged and a newer database are refused at boot with a clear reason, and not written to', async (t) => {
  // Not a database at all.
  const garbage = await dataDir(t);
  await writeFile(join(garbage, 'svc.db'), randomBytes(64 * 1024));
  // A real one cut in half (a full disk, a bad copy).
  const damaged = await dataDir(t);
  await atLevel(damaged, NAMES.at(-1)!);
  await seed(damaged, NAMES.length);
  {
    const raw = new BetterSqlite3(join(damaged, 'svc.db'));
    const ins = raw.prepare("insert into audit (at, action, outcome) values ('x', ?, 1)");
    for (let i = 0; i < 3000; i++) ins.run('a'.repeat(200));
    raw.pragma('wal_checkpoint(TRUNCATE)');
    raw.close();
    await truncate(join(damaged, 'svc.db'), Math.floor((await stat(join(damaged, 'svc.db'))).size / 2));
  }
  // Written by a newer version: a migration this one does not know.
  const newer = await dataDir(t);
  await atLevel(newer, NAMES.at(-1)!);
  await seed(newer, NAMES.length);
  {
    const raw = new BetterSqlite3(join(newer, 'svc.db'));
    raw
      .prepare(
        "insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2030-01-01T00:00:00.000Z')",
      )
      .run();
    raw.close();
  }
  const cases: [string, string, RegExp][] = [
    [
      'garbage',
      garbage,
      /^svc serve: the database \S+svc\.db cannot be opened \(file is not a database\); it was left as it is/,
    ],
    [
      'damaged',
      damaged,
      /^svc serve: the database \S+svc\.db cannot be opened \(database disk image is malformed\); it was left as it is/,
    ],
    [
      'newer',
      newer,
      /^svc serve: \S+svc\.db was written by a newer version of svc \(its migration 9999_from_the_future is unknown to this one\); it was left as it is/,
    ],
  ];
  for (const [what, dir, expected] of cases) {
    const file = join(dir, 'svc.db');
    const bytes = await sha(file);
    const logical = what === 'newer' ? dump(dir) : null;
    const stderr = await refusedBoot(dir);
    assert.match(stderr, expected, `${what}: ${stderr}`);
    assert.ok(!/\n\s+at /.test(stderr), `${what}: no stack trace`);
    assert.equal(await sha(file), bytes, `${what}: the file was not written to`);
    if (logical) assert.equal(dump(dir), logical);
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n === 'setup.token'),
      [],
      `${what}: the boot stopped before setup`,
    );
  }
});
