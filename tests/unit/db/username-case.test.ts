// Usernames are unique without regard to case (docs/operators.md "Rules"). Migration 0022 on a
// database that already holds `ada`, `ADA` and `Ada`: the oldest keeps its name, the others become
// `ADA-2` and `Ada-3` with an audit entry each, and the index then refuses `aDa`, on SQLite and on
// PostgreSQL. After it, a lookup by name finds the one operator whatever the case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MigrationProvider } from 'kysely';
import { isUniqueViolation, openDatabase, openDb, type Db } from '#lib/db/index.js';
import { Migrator } from '#lib/db/kysely.js';
import { migrations } from '#lib/db/migrations/index.js';
import { findUserByName, insertUser } from '#lib/auth/users-store.js';
import { HttpError } from '#lib/http/errors.js';
import { freshDatabase, needPostgres } from '../../_support/postgres.js';

const provider: MigrationProvider = { getMigrations: async () => migrations };

async function at0021(db: Db): Promise<void> {
  const { error } = await new Migrator({ db, provider }).migrateTo('0021_cluster_services');
  if (error) throw error;
}

async function latest(db: Db): Promise<void> {
  const { error } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) throw error;
}

async function scenario(db: Db): Promise<void> {
  await at0021(db);
  const names = [
    ['u3', 'Ada', '2024-03-01T00:00:00.000Z'],
    ['u1', 'ada', '2024-01-01T00:00:00.000Z'],
    ['u2', 'ADA', '2024-02-01T00:00:00.000Z'],
    ['u4', 'ADA-2x', '2024-04-01T00:00:00.000Z'],
    ['u5', 'ada-2', '2024-05-01T00:00:00.000Z'],
    ['u6', 'grace', '2024-06-01T00:00:00.000Z'],
  ];
  for (const [id, username, at] of names)
    await db
      .insertInto('users')
      .values({
        id,
        username,
        password_hash: 'scrypt$10$8$1$x$y',
        totp_enabled: 0,
        created_at: at,
        updated_at: at,
      } as never)
      .execute();
  await latest(db);
  const rows = await db.selectFrom('users').select(['id', 'username']).orderBy('id').execute();
  assert.deepEqual(
    rows.map((r) => [r.id, r.username]),
    [
      ['u1', 'ada'],
      // ada-2 already exists (u5, a name of its own): ADA takes the next free one.
      ['u2', 'ADA-3'],
      ['u3', 'Ada-4'],
      ['u4', 'ADA-2x'],
      ['u5', 'ada-2'],
      ['u6', 'grace'],
    ],
  );
  const audit = await db
    .selectFrom('audit')
    .select(['action', 'target', 'actor_type', 'detail'])
    .where('action', '=', 'operator.renamed')
    .orderBy('target')
    .execute();
  assert.deepEqual(
    audit.map((a) => [a.target, a.actor_type, JSON.parse(a.detail!).before.username]),
    [
      ['u2', 'system', 'ADA'],
      ['u3', 'system', 'Ada'],
    ],
  );
  await assert.rejects(
    db
      .insertInto('users')
      .values({
        id: 'u7',
        username: 'GRACE',
        password_hash: 'x',
        totp_enabled: 0,
        created_at: '2024-07-01T00:00:00.000Z',
        updated_at: '2024-07-01T00:00:00.000Z',
      } as never)
      .execute(),
    (e) => isUniqueViolation(e),
  );
  await assert.rejects(insertUser(db, 'gRaCe', 'x'), (e) => e instanceof HttpError && e.status === 409);
  assert.equal((await findUserByName(db, 'GRACE'))?.id, 'u6');
  assert.equal((await findUserByName(db, 'ada-3'))?.id, 'u2');
}

test('migration 0022 on SQLite: case collisions renamed and audited, then refused', async () => {
  const db = openDb(':memory:');
  try {
    await scenario(db);
  } finally {
    await db.destroy();
  }
});

test('migration 0022 on PostgreSQL: the same', async (t) => {
  if (!needPostgres(t)) return;
  const db = openDatabase({ dataDir: ':memory:', databaseUrl: await freshDatabase() });
  try {
    await scenario(db);
  } finally {
    await db.destroy();
  }
});
