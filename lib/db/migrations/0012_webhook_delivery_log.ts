import type { Kysely, Migration } from 'kysely';

// What each delivery to /webhooks/{appID} came to (deployed, ignored and why, rejected...), so
// "why did my push not deploy?" has an answer. Never the payload nor the signature; the last 50
// per app (pruned on insert).
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_delivery_log')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('provider', 'text')
      .addColumn('event', 'text')
      .addColumn('delivery_id', 'text')
      .addColumn('ref', 'text')
      .addColumn('commit_sha', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('reason', 'text')
      .addColumn('deployment_id', 'text')
      .execute();
    await db.schema
      .createIndex('webhook_delivery_log_app')
      .on('webhook_delivery_log')
      .columns(['app_id', 'id'])
      .execute();
  },
};
