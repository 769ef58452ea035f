import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';

// Each audit entry names the app it concerns, so an operator limited to some apps sees only
// theirs (and a revert checks the reverter's reach). Entries of app routes from before name it
// by their target; others stay null (instance-wide, or not learnt then).
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('audit').addColumn('app_id', 'text').execute();
    await sql`update audit set app_id = target
      where target is not null and target not like '{%'
        and (route like '% /api/apps/{id}%' or route like '% /webhooks/{appID}' or route in ('POST /api/apps', 'POST /api/apps/import')
          or route = 'POST /api/addons/{id}/install')`.execute(db);
    await db.schema.createIndex('audit_app_id').on('audit').columns(['app_id', 'id']).execute();
  },
};
