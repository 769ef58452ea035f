// A log kept per owner, bounded by pruning on insert: the newest rows of an owner stay, the
// older ones go. Written once for every such log (a notification channel's deliveries, an app's
// webhook delivery log); each log's store calls it in the transaction of its insert.
import type { Db } from './index.js';

/** The logs pruned this way, each with its owner's column; every one has an increasing `id`. */
const LOGS = {
  notification_deliveries: 'channel_id',
  webhook_delivery_log: 'app_id',
} as const;

/** Deletes the owner's rows older than its newest `keep` (by id, the order they were written in). */
export async function keepLast(db: Db, table: keyof typeof LOGS, owner: string, keep: number): Promise<void> {
  // The logs have these columns alike; Kysely cannot type a query over a union of tables.
  const t = table as 'webhook_delivery_log';
  const column = LOGS[table] as 'app_id';
  const oldestKept = await db
    .selectFrom(t)
    .select('id')
    .where(column, '=', owner)
    .orderBy('id', 'desc')
    .limit(1)
    .offset(keep - 1)
    .executeTakeFirst();
  if (oldestKept) await db.deleteFrom(t).where(column, '=', owner).where('id', '<', oldestKept.id).execute();
}
