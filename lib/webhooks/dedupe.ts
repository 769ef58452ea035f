// Repeated deliveries (forges retry, operators press "redeliver") must not deploy twice. This
// keeps delivery ids per app for a retention window, bounded in count; the oldest go first.
//
// For a database instead (survives restarts, shared by several processes), the same rule as a
// table:
//   CREATE TABLE webhook_deliveries (
//     app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
//     delivery_id TEXT NOT NULL,
//     received_at INTEGER NOT NULL,            -- ms since epoch
//     PRIMARY KEY (app_id, delivery_id));
//   CREATE INDEX webhook_deliveries_received ON webhook_deliveries(received_at);
// seen(), in one transaction: DELETE rows with received_at < now - window (and the oldest beyond
// the cap), then INSERT OR IGNORE the pair; 0 rows inserted means a repeat. isRepeat below is
// the same decision for a row read back.

export const DEFAULT_WINDOW_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_MAX_IDS = 10_000;

/** The pure rule: a delivery id last recorded at `recordedAt` is a repeat at `now`. */
export function isRepeat(recordedAt: number | null | undefined, now: number, windowMs = DEFAULT_WINDOW_MS): boolean {
  return recordedAt !== null && recordedAt !== undefined && now - recordedAt < windowMs;
}

export interface DeliveryDedupe {
  /** Records the id and answers true when it was already recorded within the window. */
  seen(appId: string, deliveryId: string, now?: number): boolean;
  /** Drops a recorded id, e.g. when queueing failed and the forge's retry should be honoured. */
  forget(appId: string, deliveryId: string): void;
  readonly size: number;
}

export function createDeliveryDedupe(opts: { windowMs?: number; maxIds?: number } = {}): DeliveryDedupe {
  const windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS;
  const maxIds = Math.max(1, opts.maxIds ?? DEFAULT_MAX_IDS);
  // A Map iterates in insertion order; re-inserting on every record keeps it ordered by time,
  // so expiry and eviction only ever look at the front.
  const ids = new Map<string, number>();
  const keyOf = (appId: string, deliveryId: string) => `${appId}\u0000${deliveryId}`;

  function prune(now: number) {
    for (const [k, at] of ids) {
      if (now - at < windowMs && ids.size <= maxIds) break;
      ids.delete(k);
    }
  }

  return {
    seen(appId, deliveryId, now = Date.now()) {
      const key = keyOf(appId, deliveryId);
      prune(now);
      const repeat = isRepeat(ids.get(key), now, windowMs);
      // A repeat keeps its first time: retries must not extend the window forever.
      if (!repeat) {
        ids.delete(key);
        ids.set(key, now);
        prune(now);
      }
      return repeat;
    },
    forget(appId, deliveryId) {
      ids.delete(keyOf(appId, deliveryId));
    },
    get size() {
      return ids.size;
    },
  };
}
