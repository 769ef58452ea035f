import type { Kysely, Migration } from 'kysely';

// Notification channels (URL sealed, bound to the channel id) and their last deliveries.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('notification_channels')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('url_sealed', 'text', (c) => c.notNull())
      .addColumn('url_hint', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('last_delivery', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('notification_deliveries')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('channel_id', 'text', (c) =>
        c.notNull().references('notification_channels.id').onDelete('cascade'),
      )
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('ok', 'integer', (c) => c.notNull())
      .addColumn('status', 'integer')
      .addColumn('error', 'text')
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('notification_deliveries_channel')
      .on('notification_deliveries')
      .columns(['channel_id', 'id'])
      .execute();
  },
};
