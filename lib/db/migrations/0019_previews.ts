import type { Kysely, Migration } from 'kysely';

// Previews: one per pull request (or per branch asked for through the API). A preview deploys as
// a child app row (`apps.parent_app_id`), hidden from app listings, so it gets its own engine
// names, network, volumes, deployments and env through the same pipeline as any app. Settings and
// preview-only variables belong to the parent app.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('apps')
      .addColumn('parent_app_id', 'text', (c) => c.references('apps.id').onDelete('cascade'))
      .execute();
    await db.schema.createIndex('apps_parent').on('apps').column('parent_app_id').execute();
    await db.schema
      .createTable('preview_settings')
      .addColumn('app_id', 'text', (c) => c.primaryKey().references('apps.id').onDelete('cascade'))
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('from_forks', 'integer', (c) => c.notNull())
      .addColumn('ttl_hours', 'integer', (c) => c.notNull())
      .addColumn('max', 'integer', (c) => c.notNull())
      .addColumn('inherit_env', 'text', (c) => c.notNull())
      .addColumn('database', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('preview_env')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('secret', 'integer', (c) => c.notNull())
      .addColumn('sealed', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('preview_env_pk', ['app_id', 'key'])
      .execute();
    await db.schema
      .createTable('previews')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      // The child app row the preview deploys as; its deletion takes the preview row with it.
      .addColumn('target_app_id', 'text', (c) =>
        c.notNull().unique().references('apps.id').onDelete('cascade'),
      )
      .addColumn('number', 'integer', (c) => c.notNull())
      .addColumn('title', 'text')
      .addColumn('branch', 'text', (c) => c.notNull())
      .addColumn('commit_sha', 'text')
      .addColumn('deployment_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('previews_app_number', ['app_id', 'number'])
      .execute();
  },
};
