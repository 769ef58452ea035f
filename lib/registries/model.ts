// A registry's stored credentials as the API shows them: never the password.
import type { RegistryTable } from '../db/schema.js';

export interface Registry {
  id: string;
  /** `host[:port]` as image references name it; Docker Hub is `docker.io`. */
  host: string;
  username: string;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
}

/** The password is sealed bound to its row: a sealed value moved to another row does not open. */
export const registryBinding = (id: string) => `registries:${id}:password`;

export function toRegistry(r: RegistryTable): Registry {
  return {
    id: r.id,
    host: r.host,
    username: r.username,
    created_at: r.created_at,
    updated_at: r.updated_at,
    last_used_at: r.last_used_at,
  };
}
