// Request shapes of the app endpoints (zod), apart from the model so that code running at boot
// does not load zod.
import { z } from 'zod';
import { repoUrlSchema, refSchema } from '../git/schemas.js';
import { isImageRef } from '../compose/index.js';
import { MAX_REPLICAS, constraintProblem } from '../cluster/settings.js';
import {
  APP_NAME,
  ENV_KEY,
  PULL_POLICIES,
  MAX_DRAIN_S,
  RESERVED_NAMES,
  SLEEP_MAX_MINUTES,
  SLEEP_MIN_MINUTES,
} from './model.js';
import { inlineComposeProblems, MAX_INLINE_COMPOSE_BYTES } from '../compose/inline.js';
import { PlanError, STACKS } from '../buildplan/types.js';
import { command, port, relPath, versionInput } from '../buildplan/validate.js';

export const appNameSchema = z
  .string()
  .regex(APP_NAME, 'lowercase letters, digits and "-", starting with a letter or digit, at most 63')
  .refine((n) => !RESERVED_NAMES.has(n), 'this name is reserved')
  // pr-<n>-<app> is a preview's host label: an app of that name would take a preview's host.
  .refine((n) => !/^pr-[0-9]+-/.test(n), 'names starting with "pr-<number>-" are kept for previews');

const composePath = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9._/-]+\.ya?ml$/, 'a relative path to a .yml or .yaml file')
  .refine(
    (p) => !p.startsWith('/') && !p.startsWith('-') && !p.split('/').includes('..'),
    'must stay inside the repository',
  );

/**
 * One field of a stack override, held to the rule the build plan applies to it (the same check
 * runs again at deploy): a refused value is a 400 naming the field and why, never a Dockerfile line.
 */
const planned = <T extends z.ZodType>(
  base: T,
  check: (file: string, field: string, v: unknown) => unknown,
  field: string,
) =>
  base.superRefine((v, ctx) => {
    try {
      check('(override)', field, v);
    } catch (e) {
      if (!(e instanceof PlanError)) throw e;
      ctx.addIssue({ code: 'custom', message: `${e.field} ${e.reason}` });
    }
  });

const dockerfilePath = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9._/-]+$/, 'a relative path inside the repository')
  .refine(
    (p) => !p.startsWith('/') && !p.startsWith('-') && !p.split('/').includes('..'),
    'must stay inside the repository',
  );

export const buildSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('auto') }),
  z.strictObject({ type: z.literal('dockerfile'), path: dockerfilePath.optional() }),
  z.strictObject({ type: z.literal('compose'), path: composePath.optional() }),
  z.strictObject({
    type: z.literal('stack'),
    stack: z.enum(STACKS),
    version: planned(z.string().max(100), versionInput, 'version').optional(),
    install: planned(z.string().max(2000), command, 'install').optional(),
    build: planned(z.string().max(2000), command, 'build').optional(),
    start: planned(z.string().max(2000), command, 'start').optional(),
    port: planned(z.number().int(), port, 'port').optional(),
    publish_dir: planned(z.string().max(255), relPath, 'publish_dir').optional(),
  }),
]);

export const buildLimitsSchema = z.strictObject({
  memory_mb: z
    .number()
    .int()
    .min(64)
    .max(65536)
    .optional()
    .describe('Memory of the build, in MiB (no swap beyond it)'),
  cpus: z.number().min(0.1).max(64).optional().describe('CPUs the build may use (0.5: half of one)'),
  timeout_s: z
    .number()
    .int()
    .min(10)
    .max(7200)
    .optional()
    .describe('Seconds after which the build is stopped'),
});

const pullSchema = z
  .enum(PULL_POLICIES)
  .describe('When a deploy pulls the image: if_missing (default: only what the engine lacks) or always');

export const sourceSchema = z.discriminatedUnion('type', [
  z
    .strictObject({
      type: z.literal('git'),
      // checkRepoUrl refuses credentials in the URL (a token would be stored and shown in clear).
      repo_url: repoUrlSchema,
      branch: refSchema.default('main'),
      compose_path: composePath.optional(),
      build: buildSchema.optional(),
    })
    .superRefine((s, ctx) => {
      // compose_path and build {type: compose, path} are one setting: two different answers are refused.
      if (s.compose_path === undefined || s.build === undefined) return;
      if (s.build.type !== 'compose')
        ctx.addIssue({
          code: 'custom',
          path: ['compose_path'],
          message: `a compose path with a build of type ${s.build.type}; drop one`,
        });
      else if (s.build.path !== undefined && s.build.path !== s.compose_path)
        ctx.addIssue({
          code: 'custom',
          path: ['build', 'path'],
          message: 'differs from compose_path; give one of them',
        });
    }),
  z.strictObject({
    type: z.literal('image'),
    image: z
      .string()
      .refine(isImageRef, 'not an image reference like "nginx:1.27" or "registry:5000/team/app@sha256:..."'),
    pull: pullSchema.optional(),
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
    pull: pullSchema.optional(),
  }),
]);

export const sleepAfterSchema = z
  .number()
  .int()
  .min(SLEEP_MIN_MINUTES)
  .max(SLEEP_MAX_MINUTES)
  .describe('Idle minutes (no request through the proxy) after which the app sleeps: 1 to 10080 (a week)');

export const envKeySchema = z
  .string()
  .max(255)
  .regex(ENV_KEY, 'letters, digits and "_", not starting with a digit');

export const servicePortSchema = z.number().int().min(1).max(65535);
export const healthPathSchema = z
  .string()
  .max(512)
  .regex(/^\/[\x21-\x7e]*$/, 'an absolute path like /healthz, printable characters only');

/** Cluster mode: one of the three constraint forms, checked here so no unchecked text reaches the engine. */
export const placementSchema = z.strictObject({
  constraints: z
    .array(
      z
        .string()
        .max(200)
        .superRefine((c, ctx) => {
          const problem = constraintProblem(c);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
    )
    .max(20),
});

/** Seconds a previous version may drain after a switch: 0 retires it at once; null is the default. */
export const drainSchema = z.number().int().min(0).max(MAX_DRAIN_S);

export const servicePatchSchema = z
  .strictObject({
    port: servicePortSchema.nullable().optional(),
    health_path: healthPathSchema.nullable().optional(),
    drain_s: drainSchema.nullable().optional(),
    replicas: z.number().int().min(0).max(MAX_REPLICAS).nullable().optional(),
    placement: placementSchema.nullable().optional(),
  })
  .refine(
    (v) => Object.values(v).some((x) => x !== undefined),
    'give port, health_path, drain_s, replicas and/or placement',
  );
