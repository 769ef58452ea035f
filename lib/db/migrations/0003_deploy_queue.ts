import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';

const ACTIVE_DEPLOYMENT = "status in ('queued','cloning','building','deploying','health_checking')";

// Pushes in quick succession coalesce: one deployment runs while at most one newer push waits
// behind it (`waiting` = 1). Everything else still holds to one non-terminal deployment per app,
// enforced by the index (a manual deploy or rollback while one is active is refused by it).
// `spec` records what was deployed (compose text, Dockerfile or image) so a rollback re-plans
// the same stack from the kept images without cloning.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('deployments')
      .addColumn('waiting', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('deployments').addColumn('spec', 'text').execute();
    await db.schema.alterTable('deployments').addColumn('commit_wanted', 'text').execute();
    await sql`drop index deployments_one_active`.execute(db);
    await sql`create unique index deployments_one_active on deployments (app_id) where waiting = 0 and ${sql.raw(ACTIVE_DEPLOYMENT)}`.execute(
      db,
    );
    await sql`create unique index deployments_one_waiting on deployments (app_id) where waiting = 1 and status = 'queued'`.execute(
      db,
    );
    await db.schema
      .createIndex('deployments_status')
      .on('deployments')
      .columns(['status', 'created_at'])
      .execute();
  },
};
