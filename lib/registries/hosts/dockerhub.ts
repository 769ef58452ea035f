// Docker Hub: one registry under several names. An unqualified image (`nginx:1.27`) lives there,
// and so do `docker.io/...`, `index.docker.io/...` and `registry-1.docker.io/...`: credentials
// stored under any of these names are one entry (`docker.io`), given to the engine under the
// index URL its own login uses, and tested against `registry-1.docker.io`.
import type { HostRule } from './types.js';

const ALIASES: ReadonlySet<string> = new Set([
  'docker.io',
  'index.docker.io',
  'registry-1.docker.io',
  'registry.hub.docker.com',
]);

export const dockerHub: HostRule = {
  matches: (host) => ALIASES.has(host),
  canonical: () => 'docker.io',
  serverAddress: () => 'https://index.docker.io/v1/',
  apiHost: () => 'registry-1.docker.io',
};
