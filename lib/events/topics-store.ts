// Per-resource topics name an app (logs:, stats:) or a deployment (build:) that must exist:
// a typo or a deleted resource gets an answer instead of a subscription that never speaks.
// Which topic names which resource is the topic table's (runtime/topics.ts).
import type { Db } from '../db/index.js';

/** Whether the app exists and is not being deleted. */
export async function appExists(db: Db, id: string): Promise<boolean> {
  const app = await db
    .selectFrom('apps')
    .select('id')
    .where('id', '=', id)
    .where('deleting_at', 'is', null)
    .executeTakeFirst();
  return app !== undefined;
}

export async function deploymentExists(db: Db, id: string): Promise<boolean> {
  const d = await db.selectFrom('deployments').select('id').where('id', '=', id).executeTakeFirst();
  return d !== undefined;
}
