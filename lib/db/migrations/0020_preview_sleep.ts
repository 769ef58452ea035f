import type { Kysely, Migration } from 'kysely';

// Previews sleep by default: idle minutes applied to each preview's own app row (null: never).
// Existing settings take the default too, so previews made before this sleep like new ones.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('preview_settings')
      .addColumn('sleep_after_minutes', 'integer', (c) => c.defaultTo(30))
      .execute();
  },
};
