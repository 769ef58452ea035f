import type { Kysely, Migration } from 'kysely';

// How long the previous version of a service may keep its open connections after a deployment
// switched to the new one (seconds; null: the default, 30). Retired earlier once they have ended.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('app_services').addColumn('drain_s', 'integer').execute();
  },
};
