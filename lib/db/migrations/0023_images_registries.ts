import type { Kysely, Migration } from 'kysely';

// Real images: registry credentials (the password sealed, bound to its row), the exact digests
// every deployment ran (what a rollback runs again), whether it was asked to pull again, the
// references it pulled (so the images it brought are the ones retention may remove), and one
// deploy hook per app (only the token's hash is kept).
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('registries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('host', 'text', (c) => c.notNull().unique())
      .addColumn('username', 'text', (c) => c.notNull())
      .addColumn('password_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .execute();
    await db.schema.alterTable('deployments').addColumn('image_digests', 'text').execute();
    await db.schema
      .alterTable('deployments')
      .addColumn('pull', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('deployments').addColumn('pulled', 'text').execute();
    await db.schema
      .createTable('deploy_hooks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().unique().references('apps.id').onDelete('cascade'))
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .execute();
  },
};
