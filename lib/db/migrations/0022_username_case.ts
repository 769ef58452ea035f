import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';

// Usernames are one name without regard to case (`Ada` and `ada`): a unique index on their lower
// case. Operators whose names collide already keep their accounts: the oldest (by created_at, then
// id) keeps the name, each other one gets the first free `<name>-2`, `<name>-3`... (cut to fit 64
// characters), and an audit entry (actor system "migration", event `operator.renamed`) names the
// old and the new name. Sessions, tokens and roles stay as they were. docs/operators.md says so.
const MAX = 64;

function renamed(name: string, n: number, taken: Set<string>): string {
  for (; ; n++) {
    const suffix = `-${n}`;
    const next = name.slice(0, MAX - suffix.length) + suffix;
    if (!taken.has(next.toLowerCase())) return next;
  }
}

export const migration: Migration = {
  async up(db: Kysely<any>) {
    const users = (await db
      .selectFrom('users')
      .select(['id', 'username', 'created_at'])
      .orderBy('created_at')
      .orderBy('id')
      .execute()) as Array<{ id: string; username: string; created_at: string }>;
    const taken = new Set(users.map((u) => u.username.toLowerCase()));
    const kept = new Set<string>();
    const at = new Date().toISOString();
    for (const u of users) {
      const key = u.username.toLowerCase();
      if (!kept.has(key)) {
        kept.add(key);
        continue;
      }
      const next = renamed(u.username, 2, taken);
      taken.add(next.toLowerCase());
      await db.updateTable('users').set({ username: next, updated_at: at }).where('id', '=', u.id).execute();
      await db
        .insertInto('audit')
        .values({
          at,
          actor_id: null,
          actor: 'migration',
          actor_type: 'system',
          via: 'migration',
          action: 'operator.renamed',
          route: 'PATCH /api/operators/{id}',
          summary: `Renamed an operator: ${u.username} is another operator's name without regard to case`,
          target: u.id,
          ip: null,
          outcome: 200,
          detail: JSON.stringify({
            username: next,
            before: { username: u.username },
            after: { username: next },
          }),
        })
        .execute();
    }
    await db.schema
      .createIndex('users_username_nocase')
      .unique()
      .on('users')
      .expression(sql`lower(username)`)
      .execute();
  },
};
