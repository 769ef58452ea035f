import type { Kysely, Migration } from 'kysely';

// A deployment of one commit (`POST .../deployments {commit}`, disaster recovery) keeps the commit
// asked for until the pipeline resolves it: a deployment queued across a restart still deploys it.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('deployments').addColumn('commit_pin', 'text').execute();
  },
};
