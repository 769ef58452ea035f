// One vocabulary: every `column in (...)` of the migrated schema (CHECKs and partial indexes) is
// the `as const` list the wire schemas and types take, so a list that changes without a
// migration (or a migration that writes a list of its own) fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migrate, openDb, rawConnection } from '#lib/db/index.js';
import { oneOf } from '#lib/db/check.js';
import { sql } from '#lib/db/kysely.js';
import { INVITATION_KINDS } from '#lib/db/schema.js';
import { ROLES } from '#lib/util/role-names.js';
import { ACTIVE } from '#lib/apps/deployment.js';
import { JOB_CONCURRENCY, RUN_STATUSES, RUN_TRIGGERS } from '#lib/jobs/model.js';

/** `<table or index> <column>` -> the vocabulary its condition must list, in order. */
const VOCABULARY: Record<string, readonly string[]> = {
  'users role': ROLES,
  'invitations role': ROLES,
  'invitations kind': INVITATION_KINDS,
  // The partial unique index that allows one deployment in flight per app.
  'deployments_one_active status': ACTIVE,
  'jobs concurrency': JOB_CONCURRENCY,
  'job_runs trigger': RUN_TRIGGERS,
  'job_runs status': RUN_STATUSES,
};

async function conditions(): Promise<Map<string, string[]>> {
  const db = openDb(':memory:');
  try {
    await migrate(db);
    const rows = rawConnection(db)
      .prepare('select name, sql from sqlite_master where sql is not null')
      .all() as { name: string; sql: string }[];
    const out = new Map<string, string[]>();
    for (const { name, sql: text } of rows) {
      for (const m of text.matchAll(/(\w+)\s+in\s*\(([^)]*)\)/gi)) {
        out.set(
          `${name} ${m[1]}`,
          [...m[2]!.matchAll(/'([^']*)'/g)].map((v) => v[1]!),
        );
      }
    }
    return out;
  } finally {
    await db.destroy();
  }
}

test("each CHECK and partial index of the live schema lists its vocabulary's values", async () => {
  const live = await conditions();
  for (const [where, values] of Object.entries(VOCABULARY))
    assert.deepEqual(live.get(where), [...values], `${where} drifted from its list`);
  assert.deepEqual(
    [...live.keys()].sort(),
    Object.keys(VOCABULARY).sort(),
    'a condition on a list that no vocabulary entry names',
  );
});

test('oneOf writes the condition from the list, and refuses a value that would need quoting', async () => {
  const db = openDb(':memory:');
  try {
    assert.equal(oneOf('role', ROLES).compile(db).sql, "role in ('owner','admin','deployer','viewer')");
    assert.throws(() => oneOf('role', ["x') or (1=1"]), /not a plain word/);
    await sql`create table t (role text check (${oneOf('role', ROLES)}))`.execute(db);
    await assert.rejects(sql`insert into t (role) values ('guest')`.execute(db), /CHECK constraint failed/);
  } finally {
    await db.destroy();
  }
});
