import type { Kysely, Migration } from 'kysely';

// Who asked for a deployment (the operator's username; null for a forge's push and for rows from
// before this column): the apps list and the deployments list say it next to when and which commit.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('deployments').addColumn('created_by', 'text').execute();
  },
};
