/** The one header interface the dispatcher, the WebSocket upgrade and lib/auth read: Fetch's Headers fits it. */
export interface HeaderGetter {
  get(name: string): string | null;
}

/** node:http's header object as a Fetch-style getter (names arrive lower-cased). */
export function headerGetter(raw: Record<string, string | string[] | undefined>): HeaderGetter {
  return new RawHeaders(raw);
}

class RawHeaders implements HeaderGetter {
  constructor(private readonly raw: Record<string, string | string[] | undefined>) {}
  get(name: string): string | null {
    const v = this.raw[name];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(', ') : v;
  }
}

/**
 * RFC 9110 If-Match against the resource's current strong ETag: absent holds, `*` holds for a
 * resource that exists, a list holds when one of its tags is the current one. A weak tag (W/"...")
 * never matches: If-Match compares strongly.
 */
export function ifMatchHolds(header: string | null, current: string): boolean {
  if (header === null) return true;
  const h = header.trim();
  if (h === '*') return true;
  return h.split(',').some((t) => t.trim() === current);
}
