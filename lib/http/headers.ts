/** The one header interface the dispatcher, the WebSocket upgrade and lib/auth read: Fetch's Headers fits it. */
export interface HeaderGetter {
  get(name: string): string | null;
}

/** node:http's header object as a Fetch-style getter (names arrive lower-cased). */
export function headerGetter(raw: Record<string, string | string[] | undefined>): HeaderGetter {
  return {
    get(name) {
      const v = raw[name];
      if (v === undefined) return null;
      return Array.isArray(v) ? v.join(', ') : v;
    },
  };
}
