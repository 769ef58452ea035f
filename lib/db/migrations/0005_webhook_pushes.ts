import type { Kysely, Migration } from 'kysely';

// Pushes already received, by the ref update the forge signed (ref, old and new commit): a replay
// of a captured delivery is refused whatever its delivery id. Bounded per app (oldest dropped).
// Delivery ids get an (app, time) index for their per-app bound.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_pushes')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('ref', 'text', (c) => c.notNull())
      .addColumn('old_sha', 'text', (c) => c.notNull())
      .addColumn('new_sha', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('webhook_pushes_pk', ['app_id', 'ref', 'old_sha', 'new_sha'])
      .execute();
    await db.schema
      .createIndex('webhook_pushes_app_at')
      .on('webhook_pushes')
      .columns(['app_id', 'received_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_app_at')
      .on('webhook_deliveries')
      .columns(['app_id', 'received_at'])
      .execute();
  },
};
