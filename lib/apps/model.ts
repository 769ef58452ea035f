// The app resource: its name (also its slug in every engine name) and where its code comes from.
import { z } from 'zod';
import { repoUrlSchema, refSchema } from '../git/index.js';
import { isImageRef } from '../compose/index.js';
import type { AppTable } from '../db/schema.js';

export const APP_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
// `control` would collide with the control plane's own network (svc-control).
const RESERVED = new Set(['control']);

export const appNameSchema = z
  .string()
  .regex(APP_NAME, 'lowercase letters, digits and "-", starting with a letter or digit, at most 63')
  .refine((n) => !RESERVED.has(n), 'this name is reserved');

const composePath = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9._/-]+\.ya?ml$/, 'a relative path to a .yml or .yaml file')
  .refine((p) => !p.startsWith('/') && !p.startsWith('-') && !p.split('/').includes('..'), 'must stay inside the repository');

export const sourceSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('git'),
    // A password or token in the URL would be stored and shown in plain text: deploy keys do that job.
    repo_url: repoUrlSchema.refine((u) => !/^[a-z]+:\/\/[^/@]*:[^/@]*@/i.test(u), 'credentials in the URL are refused; use the app\'s SSH deploy key'),
    branch: refSchema.default('main'),
    compose_path: composePath.optional(),
  }),
  z.object({
    type: z.literal('image'),
    image: z.string().refine(isImageRef, 'not an image reference like "nginx:1.27" or "registry:5000/team/app@sha256:..."'),
  }),
]);

export type AppSource = z.infer<typeof sourceSchema>;
export type AppStatus = 'created' | 'deploying' | 'running' | 'degraded' | 'stopped' | 'failed';

export interface App {
  id: string;
  name: string;
  source: AppSource;
  status: AppStatus;
  created_at: string;
  updated_at: string;
}

export function toApp(row: AppTable): App {
  return {
    id: row.id,
    name: row.name,
    source: JSON.parse(row.source) as AppSource,
    status: row.status as AppStatus,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const ENV_MAX_VARS = 500;
export const ENV_MAX_VALUE = 64 * 1024;

export const envKeySchema = z.string().max(255).regex(ENV_KEY, 'letters, digits and "_", not starting with a digit');

export const servicePatchSchema = z
  .object({
    port: z.number().int().min(1).max(65535).nullable().optional(),
    health_path: z
      .string()
      .max(512)
      .regex(/^\/[\x21-\x7e]*$/, 'an absolute path like /healthz, printable characters only')
      .nullable()
      .optional(),
  })
  .refine((v) => v.port !== undefined || v.health_path !== undefined, 'give port and/or health_path');
