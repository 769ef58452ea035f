// The typed client of the svc API, for scripts and the dashboard: openapi-fetch over the types
// generated from api/openapi.json. Imports nothing from lib/, handlers/ or runtime/.
import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from './types.js';

export type { paths, components, operations } from './types.js';
export type SvcClient = Client<paths>;

export interface ClientOptions {
  /** An API token (`svc_...`); without one, pass the session cookie and CSRF header in `headers`. */
  token?: string;
  headers?: Record<string, string>;
  /** Another fetch (a test host, an embedded dispatcher). */
  fetch?: (request: Request) => Promise<Response>;
}

export function createClient(baseUrl: string, opts: ClientOptions = {}): SvcClient {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  return createFetchClient<paths>({ baseUrl, headers, fetch: opts.fetch });
}
