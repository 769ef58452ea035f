import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';

// People and permissions: operators get a role, an optional list of apps, a disabled flag and a
// link to an identity provider; API tokens get scopes and apps; invitations (and reset links)
// are stored by the hash of their token only. The operator who existed before is the owner.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('users')
      .addColumn('role', 'text', (c) =>
        c
          .notNull()
          .defaultTo('owner')
          .check(sql`role in ('owner','admin','deployer','viewer')`),
      )
      .execute();
    // JSON array of app ids, or null: every app.
    await db.schema.alterTable('users').addColumn('app_ids', 'text').execute();
    await db.schema
      .alterTable('users')
      .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    // `<issuer> <subject>` of the identity provider's account, for operators who sign in there.
    await db.schema.alterTable('users').addColumn('sso_subject', 'text').execute();
    await db.schema.alterTable('users').addColumn('last_login_at', 'text').execute();
    await db.schema
      .createIndex('users_sso_subject')
      .unique()
      .on('users')
      .column('sso_subject')
      .where(sql.ref('sso_subject'), 'is not', null)
      .execute();

    // JSON arrays; null scopes: every permission of the owner; null app_ids: every app the owner reaches.
    await db.schema.alterTable('api_tokens').addColumn('scopes', 'text').execute();
    await db.schema.alterTable('api_tokens').addColumn('app_ids', 'text').execute();

    await db.schema
      .createTable('invitations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      // `invite` creates an operator; `reset` sets a new password for `user_id` and clears its TOTP.
      .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('invite','reset')`))
      .addColumn('role', 'text', (c) =>
        c.check(sql`role is null or role in ('owner','admin','deployer','viewer')`),
      )
      .addColumn('app_ids', 'text')
      .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
      .addColumn('created_by', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute();
  },
};
