// The delivery log: what each delivery to /webhooks/{appID} came to, newest first, the last 50 per
// app (pruned on insert, so a flood of deliveries cannot grow it). What a delivery carried is not
// kept: never its payload nor its signature, only the facts that explain the outcome.
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import { keepLast } from '../db/keep-last-store.js';

export const DELIVERY_LOG_SIZE = 50;
export const DELIVERY_OUTCOMES = ['deployed', 'ignored', 'duplicate', 'rejected', 'preview'] as const;
export type DeliveryOutcomeName = (typeof DELIVERY_OUTCOMES)[number];
const REASON_MAX = 500;

export interface DeliveryLogInput {
  provider: string | null;
  event: string | null;
  deliveryId: string | null;
  ref: string | null;
  commit: string | null;
  outcome: DeliveryOutcomeName;
  reason: string | null;
  deploymentId: string | null;
}

export interface DeliveryLogEntry {
  id: string;
  at: string;
  provider: string | null;
  event: string | null;
  delivery_id: string | null;
  ref: string | null;
  commit: string | null;
  outcome: DeliveryOutcomeName;
  reason: string | null;
  deployment_id: string | null;
}

export async function recordDelivery(
  db: Db,
  appId: string,
  d: DeliveryLogInput,
  now = Date.now(),
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('webhook_delivery_log')
      .values({
        app_id: appId,
        at: nowIso(now),
        provider: d.provider,
        event: d.event,
        delivery_id: d.deliveryId,
        ref: d.ref,
        commit_sha: d.commit,
        outcome: d.outcome,
        reason: d.reason === null ? null : d.reason.slice(0, REASON_MAX),
        deployment_id: d.deploymentId,
      })
      .execute();
    await keepLast(tx, 'webhook_delivery_log', appId, DELIVERY_LOG_SIZE);
  });
}

export async function listDeliveryLog(db: Db, appId: string): Promise<DeliveryLogEntry[]> {
  const rows = await db
    .selectFrom('webhook_delivery_log')
    .selectAll()
    .where('app_id', '=', appId)
    .orderBy('id', 'desc')
    .limit(DELIVERY_LOG_SIZE)
    .execute();
  return rows.map((r) => ({
    id: String(r.id),
    at: r.at,
    provider: r.provider,
    event: r.event,
    delivery_id: r.delivery_id,
    ref: r.ref,
    commit: r.commit_sha,
    outcome: r.outcome as DeliveryOutcomeName,
    reason: r.reason,
    deployment_id: r.deployment_id,
  }));
}
