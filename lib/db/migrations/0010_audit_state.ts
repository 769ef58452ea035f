import type { Kysely, Migration } from 'kysely';

// Audit diff and revert: what the audited change's target looked like before and after (a flat
// JSON state, secrets as sealed envelopes with a keyed digest), and whether it was reverted.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    for (const [name, type] of [
      ['target_kind', 'text'],
      ['target_id', 'text'],
      ['state_before', 'text'],
      ['state_after', 'text'],
      ['has_state', 'integer'],
      ['reverted_at', 'text'],
      ['reverted_by', 'integer'],
      ['revert_of', 'integer'],
    ] as const) {
      await db.schema.alterTable('audit').addColumn(name, type).execute();
    }
    await db.schema
      .createIndex('audit_target')
      .on('audit')
      .columns(['target_kind', 'target_id', 'id'])
      .execute();
  },
};
