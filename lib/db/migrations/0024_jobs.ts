import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';

// Jobs, one-off runs and the release command. A job remembers the last due time it handled
// (`last_scheduled_at`): claiming the next one is a conditional update, and a run of a due time is
// one row (unique per job and due time), so no due time runs twice, even across restarts. Every
// run (scheduled, manual, a one-off command, a release command) is a row with its output kept in
// `run_logs`, bounded like a deployment's.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('apps').addColumn('release_command', 'text').execute();
    await db.schema.alterTable('apps').addColumn('release_timeout_s', 'integer').execute();
    await db.schema
      .createTable('jobs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('schedule', 'text', (c) => c.notNull())
      .addColumn('timezone', 'text', (c) => c.notNull())
      .addColumn('command', 'text', (c) => c.notNull())
      .addColumn('service', 'text')
      .addColumn('timeout_s', 'integer', (c) => c.notNull())
      .addColumn('concurrency', 'text', (c) =>
        c.notNull().check(sql`concurrency in ('forbid','replace','allow')`),
      )
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('last_scheduled_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('jobs_app_name', ['app_id', 'name'])
      .execute();
    await db.schema
      .createTable('job_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('app_id', 'text', (c) => c.notNull().references('apps.id').onDelete('cascade'))
      .addColumn('job_id', 'text', (c) => c.references('jobs.id').onDelete('cascade'))
      .addColumn('trigger', 'text', (c) =>
        c.notNull().check(sql`trigger in ('schedule','manual','release','command')`),
      )
      .addColumn('status', 'text', (c) =>
        c
          .notNull()
          .check(
            sql`status in ('queued','running','succeeded','failed','timed_out','canceled','skipped','interrupted')`,
          ),
      )
      .addColumn('reason', 'text')
      .addColumn('command', 'text', (c) => c.notNull())
      .addColumn('service', 'text')
      .addColumn('deployment_id', 'text')
      .addColumn('image', 'text')
      .addColumn('container_id', 'text')
      .addColumn('service_id', 'text')
      .addColumn('exit_code', 'integer')
      .addColumn('timeout_s', 'integer', (c) => c.notNull())
      .addColumn('scheduled_for', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text')
      .addColumn('finished_at', 'text')
      .execute();
    await db.schema
      .createIndex('job_runs_slot')
      .on('job_runs')
      .columns(['job_id', 'scheduled_for'])
      .unique()
      .execute();
    await db.schema.createIndex('job_runs_app').on('job_runs').columns(['app_id', 'created_at']).execute();
    await db.schema.createIndex('job_runs_job').on('job_runs').columns(['job_id', 'created_at']).execute();
    await db.schema.createIndex('job_runs_status').on('job_runs').column('status').execute();
    await db.schema
      .createTable('run_logs')
      .addColumn('run_id', 'text', (c) => c.notNull().references('job_runs.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('stream', 'text', (c) => c.notNull())
      .addColumn('line', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('run_logs_pk', ['run_id', 'seq'])
      .execute();
  },
};
