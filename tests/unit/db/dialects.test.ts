// The control database on SQLite and on PostgreSQL (SVC_DATABASE_URL): the same migrations from
// empty, the same answers from the same repository calls (counts and 64-bit ids as numbers,
// flags as 0/1, timestamps as the ISO text written), and the row locks that PostgreSQL's
// concurrent writers need where SQLite had one writer at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DatabaseError,
  dialectOf,
  isUniqueViolation,
  migrate,
  openDatabase,
  openDb,
  ping,
  type Db,
} from '#lib/db/index.js';
import { sql } from '#lib/db/kysely.js';
import { countUsers, insertUser, findUserByName } from '#lib/auth/users-store.js';
import { acceptInvitation, createInvitation } from '#lib/auth/invitations.js';
import { getApp, insertApp, listApps } from '#lib/apps/store.js';
import { insertCoalesced, insertDeployment, listDeployments, transition } from '#lib/deploy/store.js';
import { listAudit, recordAudit } from '#lib/audit/index.js';
import { getAuditRow } from '#lib/audit/store.js';
import { readDeployFigures } from '#lib/metrics/platform.js';
import { claimSlot, insertConfig, listConfigRows } from '#lib/backups/store.js';
import type { BackupConfigTable } from '#lib/db/schema.js';
import { HttpError } from '#lib/http/errors.js';
import { freshDatabase, needPostgres } from '../../_support/postgres.js';
import { freePort } from '../../_support/net.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

async function pgDb(): Promise<Db> {
  const db = openDatabase({ dataDir: ':memory:', databaseUrl: await freshDatabase() });
  await migrate(db);
  return db;
}

async function sqliteDb(): Promise<Db> {
  const db = openDb(':memory:');
  await migrate(db);
  return db;
}

/** Random ids (ULIDs, tokens) named by their order of appearance, so two runs compare equal. */
function stable(value: unknown): unknown {
  const names = new Map<string, string>();
  return JSON.parse(
    JSON.stringify(value, (_k, v) =>
      typeof v === 'string' && /^[0-9a-z]{26}$/.test(v)
        ? (names.get(v) ?? (names.set(v, `id${names.size}`), names.get(v)))
        : v,
    ),
  );
}

async function tables(db: Db): Promise<Record<string, string[]>> {
  const rows =
    dialectOf(db) === 'postgres'
      ? (
          await sql<{ t: string; c: string }>`select table_name as t, column_name as c
            from information_schema.columns where table_schema = 'public'`.execute(db)
        ).rows
      : (
          await sql<{ t: string; c: string }>`select m.name as t, p.name as c
            from sqlite_master m join pragma_table_info(m.name) p where m.type = 'table'`.execute(db)
        ).rows;
  const out: Record<string, string[]> = {};
  for (const r of rows) {
    if (r.t.startsWith('sqlite_')) continue;
    (out[r.t] ??= []).push(r.c);
  }
  for (const k of Object.keys(out)) out[k]!.sort();
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

test('migrations run up from empty on both databases, to the same tables and columns', async (t) => {
  if (!needPostgres(t)) return;
  const [lite, pg] = [await sqliteDb(), await pgDb()];
  try {
    assert.equal(dialectOf(lite), 'sqlite');
    assert.equal(dialectOf(pg), 'postgres');
    const [a, b] = [await tables(lite), await tables(pg)];
    assert.ok(Object.keys(a).length > 30, 'the whole schema');
    assert.deepEqual(b, a);
    // Every migration recorded once, in the same order; a second run changes nothing.
    const names = async (db: Db) =>
      (
        await db
          .selectFrom('kysely_migration' as never)
          .select('name' as never)
          .execute()
      ).map((r) => (r as { name: string }).name);
    assert.deepEqual(await names(pg), await names(lite));
    await migrate(pg);
    assert.deepEqual(await tables(pg), b);
    await ping(pg);
  } finally {
    await lite.destroy();
    await pg.destroy();
  }
});

/** The same calls on one database; what they answered, ids made stable. */
async function script(db: Db): Promise<unknown> {
  const out: Record<string, unknown> = {};
  out.usersBefore = await countUsers(db);
  const owner = await insertUser(db, 'owner', 'hash');
  await insertUser(db, 'viewer', 'hash', { role: 'viewer', appIds: [] });
  out.usersAfter = await countUsers(db);
  // insertUser stamps the clock's time: its type compared, the rest exactly.
  const { created_at, updated_at, ...user } = (await findUserByName(db, 'owner'))!;
  out.owner = { ...user, created_at: typeof created_at, updated_at: typeof updated_at };
  const app = await insertApp(db, 'shop', { type: 'image', image: 'nginx:1' }, T0);
  await assert.rejects(insertApp(db, 'shop', { type: 'image', image: 'nginx:1' }, T0), {
    status: 409,
  });
  out.apps = await listApps(db);
  out.app = await getApp(db, app.id);
  const first = await insertDeployment(db, { appId: app.id, trigger: 'manual', ref: 'main' }, T0);
  // A second active one is the unique partial index's refusal, seen as 409 on both.
  await assert.rejects(insertDeployment(db, { appId: app.id, trigger: 'manual', ref: 'main' }, T0 + 1), {
    status: 409,
  });
  await transition(db, first.id, 'building', {}, { now: T0 + 1000 });
  out.queued = await insertCoalesced(db, { appId: app.id, trigger: 'push', ref: 'main' }, T0 + 2000);
  await transition(db, first.id, 'succeeded', {}, { now: T0 + 61_000 });
  out.deployments = await listDeployments(db, app.id, { limit: 10 });
  out.figures = await readDeployFigures(db);
  const id = await recordAudit(db, {
    route: 'POST /api/apps',
    actorId: owner.id,
    actor: 'owner',
    target: app.id,
    outcome: 201,
    detail: { name: 'shop' },
  });
  out.auditId = typeof id;
  out.audit = (await listAudit(db, { limit: 10, action: 'post /API/apps' })).items.map((e) => ({
    ...e,
    id: typeof e.id,
    at: typeof e.at,
  }));
  // A 64-bit identity: past 2^32 and back as the same JavaScript number.
  const big = 2 ** 40 + 7;
  await db
    .insertInto('audit')
    .values({ id: big, at: new Date(T0).toISOString(), action: 'x', route: 'GET /x', outcome: 200 } as never)
    .execute();
  const row = await getAuditRow(db, big);
  out.bigId = [row?.id, typeof row?.id];
  const cfg: BackupConfigTable = {
    id: '01backupconfig00000000000a',
    app_id: app.id,
    source: JSON.stringify({ type: 'volume', volume: 'data' }),
    schedule: '0 3 * * *',
    keep_last: 7,
    destination: JSON.stringify({ type: 'local' }),
    secret_sealed: null,
    enabled: 1,
    verify_after_run: 0,
    last_scheduled_at: null,
    created_at: new Date(T0).toISOString(),
    updated_at: new Date(T0).toISOString(),
  };
  await insertConfig(db, cfg);
  out.claims = [
    await claimSlot(db, cfg, '2026-03-02T03:00:00.000Z'),
    await claimSlot(db, cfg, '2026-03-02T03:00:00.000Z'),
  ];
  out.backups = await listConfigRows(db, app.id);
  out.sums = (
    await sql<{
      n: number;
      total: number;
      biggest: number;
    }>`select count(*) as n, sum(keep_last) as total, max(keep_last) as biggest from backup_configs`.execute(
      db,
    )
  ).rows;
  return stable(out);
}

test('the same repository calls answer the same on SQLite and PostgreSQL', async (t) => {
  if (!needPostgres(t)) return;
  const [lite, pg] = [await sqliteDb(), await pgDb()];
  try {
    const a = (await script(lite)) as Record<string, unknown>;
    const b = (await script(pg)) as Record<string, unknown>;
    // Spot checks first (a clearer failure than the whole object), then everything.
    assert.deepEqual(b.usersAfter, 2);
    assert.deepEqual(b.bigId, [2 ** 40 + 7, 'number']);
    assert.deepEqual(b.claims, [true, false]);
    assert.deepEqual(b.sums, [{ n: 1, total: 7, biggest: 7 }]);
    assert.equal(typeof (b.owner as { totp_enabled: unknown }).totp_enabled, 'number');
    assert.equal((b.audit as unknown[]).length, 1, 'the action filter ignores case on both');
    for (const k of Object.keys(a)) assert.deepEqual(b[k], a[k], k);
  } finally {
    await lite.destroy();
    await pg.destroy();
  }
});

test('a unique violation is recognised on both databases', async (t) => {
  if (!needPostgres(t)) return;
  for (const db of [await sqliteDb(), await pgDb()]) {
    try {
      await insertUser(db, 'same', 'hash');
      // Written directly: insertUser answers the violation as a 409 (below).
      const row = {
        id: 'u-dup',
        username: 'SAME',
        password_hash: 'hash',
        totp_enabled: 0,
        created_at: '2026-03-01T10:00:00.000Z',
        updated_at: '2026-03-01T10:00:00.000Z',
      };
      const e = await db
        .insertInto('users')
        .values(row as never)
        .execute()
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(isUniqueViolation(e), `${dialectOf(db)}: ${String(e)}`);
      await assert.rejects(insertUser(db, 'Same', 'hash'), (x) => x instanceof HttpError && x.status === 409);
    } finally {
      await db.destroy();
    }
  }
});

test('on PostgreSQL, one invitation redeemed by many at once creates one operator', async (t) => {
  if (!needPostgres(t)) return;
  const db = await pgDb();
  try {
    const owner = await insertUser(db, 'owner', 'hash');
    const inv = await createInvitation(
      db,
      { id: owner.id, role: 'owner' },
      owner.id,
      { role: 'deployer' },
      null,
    );
    const token = /\/invite\/([A-Za-z0-9_-]{43})$/.exec(inv.url)![1]!;
    const tries = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        acceptInvitation(db, token, { username: `new${i}`, hashPassword: async () => 'hash' }),
      ),
    );
    const won = tries.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, JSON.stringify(tries.map((r) => r.status)));
    for (const r of tries)
      if (r.status === 'rejected') assert.ok(r.reason instanceof HttpError, String(r.reason));
    assert.equal(await countUsers(db), 2);
  } finally {
    await db.destroy();
  }
});

test('an unreachable PostgreSQL stops the boot with a DatabaseError that shows no password', async () => {
  const port = await freePort();
  const db = openDatabase({
    dataDir: ':memory:',
    databaseUrl: `postgres://svc:s3cret-pass@127.0.0.1:${port}/svc`,
  });
  try {
    await assert.rejects(migrate(db), (e: unknown) => {
      assert.ok(e instanceof DatabaseError, String(e));
      assert.match(e.message, /PostgreSQL database cannot be migrated/);
      assert.equal(e.message.includes('s3cret-pass'), false);
      return true;
    });
  } finally {
    await db.destroy();
  }
});
