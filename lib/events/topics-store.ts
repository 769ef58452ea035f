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

/**
 * The app a `build:<deploymentId>` topic is about: a preview's deployment is read with its app's
 * access (the preview's own row is no app of a list); null when there is no such deployment.
 */
export async function deploymentTopicApp(db: Db, deploymentId: string): Promise<string | null> {
  const d = await db
    .selectFrom('deployments')
    .leftJoin('previews', 'previews.target_app_id', 'deployments.app_id')
    .select(['deployments.app_id', 'previews.app_id as parent_app_id'])
    .where('deployments.id', '=', deploymentId)
    .executeTakeFirst();
  return d ? (d.parent_app_id ?? d.app_id) : null;
}
