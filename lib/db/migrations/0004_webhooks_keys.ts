import type { Kysely, Migration } from 'kysely';

export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('app_webhooks')
      .addColumn('app_id', 'text', (c) => c.primaryKey().references('apps.id').onDelete('cascade'))
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('app_triggers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('pattern', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('app_triggers_app').on('app_triggers').column('app_id').execute();
    await db.schema
      .createTable('app_ssh_keys')
      .addColumn('app_id', 'text', (c) => c.primaryKey().references('apps.id').onDelete('cascade'))
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('private_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Delivery ids seen within the retention window: a forge's retry must not deploy twice.
    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('webhook_deliveries_pk', ['app_id', 'delivery_id'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_at')
      .on('webhook_deliveries')
      .column('received_at')
      .execute();
  },
};
