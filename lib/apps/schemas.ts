// Request shapes of the app endpoints (zod), apart from the model so that code running at boot
// does not load zod.
import { z } from 'zod';
import { repoUrlSchema, refSchema } from '../git/schemas.js';
import { isImageRef } from '../compose/index.js';
import { APP_NAME, ENV_KEY, RESERVED_NAMES } from './model.js';
import { inlineComposeProblems, MAX_INLINE_COMPOSE_BYTES } from '../deploy/source.js';

export const appNameSchema = z
  .string()
  .regex(APP_NAME, 'lowercase letters, digits and "-", starting with a letter or digit, at most 63')
  .refine((n) => !RESERVED_NAMES.has(n), 'this name is reserved');

const composePath = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9._/-]+\.ya?ml$/, 'a relative path to a .yml or .yaml file')
  .refine((p) => !p.startsWith('/') && !p.startsWith('-') && !p.split('/').includes('..'), 'must stay inside the repository');

export const sourceSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('git'),
    // checkRepoUrl refuses credentials in the URL (a token would be stored and shown in clear).
    repo_url: repoUrlSchema,
    branch: refSchema.default('main'),
    compose_path: composePath.optional(),
  }),
  z.strictObject({
    type: z.literal('image'),
    image: z.string().refine(isImageRef, 'not an image reference like "nginx:1.27" or "registry:5000/team/app@sha256:..."'),
  }),
  // An inline compose file (add-ons): the compose policy runs on it now and again at deploy.
  z.strictObject({
    type: z.literal('compose'),
    compose: z
      .string()
      .min(1)
      .max(MAX_INLINE_COMPOSE_BYTES)
      .superRefine((text, ctx) => {
        for (const p of inlineComposeProblems(text)) ctx.addIssue({ code: 'custom', message: p.message });
      }),
  }),
]);

export const envKeySchema = z.string().max(255).regex(ENV_KEY, 'letters, digits and "_", not starting with a digit');

export const servicePortSchema = z.number().int().min(1).max(65535);
export const healthPathSchema = z
  .string()
  .max(512)
  .regex(/^\/[\x21-\x7e]*$/, 'an absolute path like /healthz, printable characters only');

export const servicePatchSchema = z
  .strictObject({
    port: servicePortSchema.nullable().optional(),
    health_path: healthPathSchema.nullable().optional(),
  })
  .refine((v) => v.port !== undefined || v.health_path !== undefined, 'give port and/or health_path');
