// A few seconds of memory for credential lookups: every authenticated request would otherwise
// run the same indexed query. Any change to what a lookup returns (revocation, step-up, TOTP,
// logout) clears every cache at once, so revocation stays immediate; the TTL only bounds how
// long a change made behind this process's back (another process on the same file) goes unseen.
const TTL_MS = 5_000;
const MAX_ENTRIES = 1024;
const caches = new Set<Map<string, { row: unknown; until: number }>>();

export interface CredentialCache<T> {
  get(key: string, now: number): T | undefined;
  set(key: string, row: T, now: number): void;
  delete(key: string): void;
}

export function credentialCache<T>(): CredentialCache<T> {
  const map = new Map<string, { row: unknown; until: number }>();
  caches.add(map);
  return {
    get(key, now) {
      const e = map.get(key);
      if (!e) return undefined;
      if (e.until <= now) {
        map.delete(key);
        return undefined;
      }
      return e.row as T;
    },
    set(key, row, now) {
      if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
      map.set(key, { row, until: now + TTL_MS });
    },
    delete(key) {
      map.delete(key);
    },
  };
}

const listeners = new Set<() => void>();

/**
 * Called after every credential change (revocation, logout, a deleted operator, a new password):
 * holders of long-lived connections re-check them, so a revoked principal's WebSockets close too.
 */
export function onCredentialsChanged(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function invalidateCredentials(): void {
  for (const m of caches) m.clear();
  for (const fn of listeners) {
    try {
      fn();
    } catch {
      // A listener's failure must not undo or hide the change itself.
    }
  }
}
