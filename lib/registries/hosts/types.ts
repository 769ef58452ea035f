/** How one kind of registry host is named and reached (one file per rule, listed in index.ts). */
export interface HostRule {
  /** Whether a host (lower-cased, with its port) is this rule's. */
  matches(host: string): boolean;
  /** The name credentials are stored and matched under. */
  canonical(host: string): string;
  /** What the engine and the builder are told the credentials are for. */
  serverAddress(host: string): string;
  /** The host whose `/v2/` answers for this registry. */
  apiHost(host: string): string;
}
