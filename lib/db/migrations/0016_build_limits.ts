import type { Kysely, Migration } from 'kysely';

// Per-app limits on image builds (memory, CPUs, time), as JSON; null: the engine's defaults and
// only the deployment timeout.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('apps').addColumn('build_limits', 'text').execute();
  },
};
