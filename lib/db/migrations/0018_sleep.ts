import type { Kysely, Migration } from 'kysely';

// Sleeping apps: how many idle minutes put an app to sleep (null: never), and since when it sleeps
// (null: awake). While `sleeping_at` is set the proxy routes the app's hosts to the wake path.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('apps').addColumn('sleep_after_minutes', 'integer').execute();
    await db.schema.alterTable('apps').addColumn('sleeping_at', 'text').execute();
  },
};
