import type { Kysely, Migration } from 'kysely';

// What a deployment took from the app's configuration file in its repository (svc.yaml): JSON
// `{file, applied}`, null when the commit had no file (or for rows from before this column).
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('deployments').addColumn('config', 'text').execute();
  },
};
