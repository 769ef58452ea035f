// The few rows the resource sampler reads from the control database: which app a container
// label names (its id by its name). The samples themselves go to the series store.
import type { Db } from '../db/index.js';

/** App name -> app id, for every app not being deleted. */
export async function appIdsByName(db: Db): Promise<Map<string, string>> {
  const rows = await db.selectFrom('apps').select(['id', 'name']).where('deleting_at', 'is', null).execute();
  return new Map(rows.map((r) => [r.name, r.id]));
}
