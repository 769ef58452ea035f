import type { Kysely, Migration } from 'kysely';

// Managed databases and backups (issue 15). Passwords and S3 secret keys are sealed, bound to their row.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('app_databases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('engine', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('username', 'text', (c) => c.notNull())
      .addColumn('password_sealed', 'text', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('env_var', 'text', (c) => c.notNull())
      .addColumn('container', 'text', (c) => c.notNull())
      .addColumn('volume', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('app_databases_app').on('app_databases').column('app_id').execute();
    await db.schema
      .createIndex('app_databases_env')
      .on('app_databases')
      .columns(['app_id', 'env_var'])
      .unique()
      .execute();
    await db.schema
      .createTable('backup_configs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('schedule', 'text', (c) => c.notNull())
      .addColumn('keep_last', 'integer', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('secret_sealed', 'text')
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('verify_after_run', 'integer', (c) => c.notNull())
      .addColumn('last_scheduled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('backup_configs_app').on('backup_configs').column('app_id').execute();
    await db.schema
      .createTable('backup_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('backup_id', 'text', (c) => c.notNull().references('backup_configs.id').onDelete('cascade'))
      .addColumn('app_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('artifact', 'text')
      .addColumn('artifact_removed', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('size_bytes', 'integer')
      .addColumn('sha256', 'text')
      .addColumn('error', 'text')
      .addColumn('verified_at', 'text')
      .addColumn('verify_error', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
    await db.schema
      .createIndex('backup_runs_backup')
      .on('backup_runs')
      .columns(['backup_id', 'started_at'])
      .execute();
    await db.schema
      .createTable('backup_restores')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('run_id', 'text', (c) => c.notNull().references('backup_runs.id').onDelete('cascade'))
      .addColumn('app_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
  },
};
