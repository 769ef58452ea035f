// The vocabulary of managed databases: the engines that can be provisioned, a database's states,
// and its view on the wire. A leaf: lib/api derives its schemas from it without loading the
// engines (engines/), provisioning (index.ts) or Docker.
import type { AppDatabaseTable } from '../db/schema.js';

/** The engines of engines/index.ts, one file each; the table there is typed by this list. */
export const DB_ENGINES = ['postgres', 'mariadb', 'redis'] as const;
export type DbEngine = (typeof DB_ENGINES)[number];

export const DATABASE_STATUSES = ['provisioning', 'ready', 'error'] as const;
export type DatabaseStatus = (typeof DATABASE_STATUSES)[number];

export interface DatabaseView {
  id: string;
  app_id: string;
  engine: DbEngine;
  version: string;
  name: string;
  username: string;
  host: string;
  port: number;
  env_var: string;
  status: DatabaseStatus;
  error: string | null;
  size_bytes: number | null;
  created_at: string;
}

export function toView(r: AppDatabaseTable, size: number | null = null): DatabaseView {
  return {
    id: r.id,
    app_id: r.app_id,
    engine: r.engine as DbEngine,
    version: r.version,
    name: r.name,
    username: r.username,
    host: r.host,
    port: r.port,
    env_var: r.env_var,
    status: r.status as DatabaseView['status'],
    error: r.error,
    size_bytes: size,
    created_at: r.created_at,
  };
}
