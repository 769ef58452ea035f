import type { Kysely, Migration } from 'kysely';

// The instance backup: its own tables rather than backup_configs with a nullable app, so that every
// app backup query keeps its non-null app_id and the cascade from apps stays as it is.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('instance_backup')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('schedule', 'text', (c) => c.notNull())
      .addColumn('keep_last', 'integer', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('secret_sealed', 'text')
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('last_scheduled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('instance_backup_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('artifact', 'text')
      .addColumn('artifact_removed', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('size_bytes', 'integer')
      .addColumn('sha256', 'text')
      .addColumn('error', 'text')
      .addColumn('notes', 'text')
      .addColumn('verified_at', 'text')
      .addColumn('verify_error', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
    await db.schema
      .createIndex('instance_backup_runs_started')
      .on('instance_backup_runs')
      .column('started_at')
      .execute();
  },
};
