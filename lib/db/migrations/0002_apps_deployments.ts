import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';

const ACTIVE_DEPLOYMENT = "status in ('queued','cloning','building','deploying','health_checking')";

export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('apps')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('deleting_at', 'text')
      .execute();
    await db.schema
      .createTable('app_env')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('secret', 'integer', (c) => c.notNull())
      .addColumn('sealed', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('app_env_pk', ['app_id', 'key'])
      .execute();
    await db.schema
      .createTable('app_services')
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('port', 'integer')
      .addColumn('health_path', 'text')
      .addPrimaryKeyConstraint('app_services_pk', ['app_id', 'name'])
      .execute();
    await db.schema
      .createTable('deployments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('ref', 'text')
      .addColumn('commit_sha', 'text')
      .addColumn('commit_subject', 'text')
      .addColumn('images', 'text')
      .addColumn('error', 'text')
      .addColumn('rollback_of', 'text')
      .addColumn('delivery_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text')
      .addColumn('finished_at', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('deployments_app')
      .on('deployments')
      .columns(['app_id', 'created_at'])
      .execute();
    // At most one non-terminal deployment per app, enforced by the database itself.
    await sql`create unique index deployments_one_active on deployments (app_id) where ${sql.raw(ACTIVE_DEPLOYMENT)}`.execute(
      db,
    );
    await db.schema
      .createTable('deployment_events')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('deployment_events_dep')
      .on('deployment_events')
      .column('deployment_id')
      .execute();
    await db.schema
      .createTable('deployment_logs')
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('stream', 'text', (c) => c.notNull())
      .addColumn('line', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('deployment_logs_pk', ['deployment_id', 'seq'])
      .execute();
  },
};
