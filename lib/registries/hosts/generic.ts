// Any other registry (self-hosted, a forge's, a cloud's): known by its host and port as image
// references write it, and asked at that same address.
import type { HostRule } from './types.js';

export const generic: HostRule = {
  matches: () => true,
  canonical: (host) => host,
  serverAddress: (host) => host,
  apiHost: (host) => host,
};
