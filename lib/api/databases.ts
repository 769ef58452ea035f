// Wire shapes of managed databases and the engines that can be provisioned.
import { z } from 'zod';
import { DATABASE_STATUSES, DB_ENGINES } from '../databases/model.js';
import { named, ts } from './common.js';

export const databaseSchema = named(
  'Database',
  z.object({
    id: z.string(),
    app_id: z.string(),
    engine: z.enum(DB_ENGINES),
    version: z.string(),
    name: z.string(),
    username: z.string(),
    host: z.string(),
    port: z.number().int(),
    env_var: z.string(),
    status: z.enum(DATABASE_STATUSES),
    error: z.string().nullable(),
    size_bytes: z.number().nullable(),
    created_at: ts,
  }),
  'A managed database of an app (the password is sealed; the connection URL is a secret env var of the app)',
);

export const databaseEngineSchema = named(
  'DatabaseEngine',
  z.object({
    engine: z.enum(DB_ENGINES),
    versions: z.array(z.string()),
    default_version: z.string(),
    images: z.record(z.string(), z.string()).describe('Version -> image reference'),
  }),
  'A database engine that can be provisioned, with its pinned versions',
);
