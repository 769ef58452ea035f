// Wire shapes of registry credentials and deploy hooks: never a password, never a hook's token
// except in the one answer that makes it.
import { z } from 'zod';
import { named, ts } from './common.js';

export const registrySchema = named(
  'Registry',
  z.object({
    id: z.string(),
    host: z.string().describe('host[:port] as image references name it; Docker Hub is docker.io'),
    username: z.string(),
    created_at: ts,
    updated_at: ts,
    last_used_at: ts.nullable().describe('When a pull or a test last used these credentials'),
  }),
  'Credentials of one container registry (the password is sealed and never returned)',
);

export const registryTestSchema = named(
  'RegistryTest',
  z.object({ ok: z.boolean(), error: z.string().optional() }),
  "A login against the registry's /v2/ with the stored credentials",
);

export const deployHookSchema = named(
  'DeployHook',
  z.object({
    exists: z.boolean(),
    id: z.string().nullable(),
    created_at: ts.nullable(),
    last_used_at: ts.nullable(),
  }),
  'Whether the app has a deploy hook (its URL is shown only when it is made)',
);
