// Wire shapes of apps: the app, its source and build settings, build plan, services, environment
// and the portable spec.
import { z } from 'zod';
import { APP_STATUSES, PULL_POLICIES } from '../apps/model.js';
import { STACKS } from '../buildplan/types.js';
import { FINDING_LEVELS } from '../compose/types.js';
import { DOMAIN_STATUSES } from '../domains/status.js';
import { DEPLOY_STATUSES, DEPLOY_TRIGGERS } from '../apps/deployment.js';
import { named, ts } from './common.js';
import { appFileSchema } from '../appspec/spec.js';

export const buildSettingSchema = named(
  'BuildSetting',
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('auto') }),
    z.object({ type: z.literal('dockerfile'), path: z.string().optional() }),
    z.object({ type: z.literal('compose'), path: z.string().optional() }),
    z.object({
      type: z.literal('stack'),
      stack: z.enum(STACKS),
      version: z.string().optional(),
      install: z.string().optional(),
      build: z.string().optional(),
      start: z.string().optional(),
      port: z.number().optional(),
      publish_dir: z.string().optional(),
    }),
  ]),
  'How a git app is built; unset: its compose file, else its Dockerfile, else auto (detected from its files)',
);

export const buildLimitsSchema = named(
  'BuildLimits',
  z.object({
    memory_mb: z.number().optional(),
    cpus: z.number().optional(),
    timeout_s: z.number().optional(),
  }),
  'Bounds of one image build; an absent field is unbounded',
);

export const buildPlanSchema = named(
  'BuildPlan',
  z.object({
    stack: z.enum(STACKS),
    detected_from: z.array(z.string()).describe('Repository files the decision rests on'),
    runtime: z.object({ name: z.string(), version: z.string(), image: z.string() }),
    images: z
      .array(z.string())
      .describe('Every image reference the Dockerfile names, as written (before SVC_IMAGE_MAP)'),
    install: z.string().nullable(),
    build: z.string().nullable(),
    start: z.string().nullable(),
    port: z.number(),
    dockerfile: z.string().describe('The generated Dockerfile'),
    warnings: z.array(z.string()),
  }),
);

export const appSourceSchema = named(
  'AppSource',
  z.discriminatedUnion('type', [
    z.object({
      type: z.literal('git'),
      repo_url: z.string(),
      branch: z.string(),
      compose_path: z.string().optional(),
      build: buildSettingSchema.optional(),
    }),
    z.object({ type: z.literal('image'), image: z.string(), pull: z.enum(PULL_POLICIES).optional() }),
    z.object({ type: z.literal('compose'), compose: z.string(), pull: z.enum(PULL_POLICIES).optional() }),
  ]),
);

export const appSchema = named(
  'App',
  z.object({
    id: z.string(),
    name: z.string(),
    source: appSourceSchema,
    status: z.enum(APP_STATUSES),
    build_limits: buildLimitsSchema.nullable(),
    sleep_after_minutes: z
      .number()
      .int()
      .nullable()
      .describe('Idle minutes (no request through the proxy) after which the app sleeps; null: never'),
    release_command: z
      .array(z.string())
      .nullable()
      .describe(
        'Run once per deployment (exec form) in the new image with the new environment, before the new version takes traffic; null: none',
      ),
    release_timeout_s: z.number().int().describe('Seconds the release command may run (default 600)'),
    created_at: ts,
    updated_at: ts,
  }),
);

export const envItemSchema = named(
  'EnvItem',
  z.object({ key: z.string(), secret: z.boolean(), value: z.string().nullable() }),
);

export const serviceSchema = named(
  'Service',
  z.object({
    name: z.string(),
    image: z.string(),
    status: z.string(),
    health: z.string().nullable(),
    port: z.number().int().nullable(),
    health_path: z.string().nullable(),
    /** Seconds the previous version keeps its open connections after a deployment's switch. */
    drain_s: z.number().int(),
    published_ports: z.array(
      z.object({
        host_ip: z.string(),
        host_port: z.number().int(),
        container_port: z.number().int(),
        protocol: z.string(),
      }),
    ),
    /** Cluster mode only: the service's tasks, by node hostname. */
    tasks: z
      .array(z.object({ node: z.string(), state: z.string(), container_id: z.string().optional() }))
      .optional(),
  }),
);

export const serviceSettingsSchema = z.object({
  name: z.string(),
  port: z.number().int().nullable(),
  health_path: z.string().nullable(),
  /** Seconds the previous version keeps its open connections after a deployment's switch (default 30). */
  drain_s: z.number().int(),
  /** Cluster mode (docs/cluster.md): null is one replica, and no constraint. */
  replicas: z.number().int().nullable(),
  placement: z.object({ constraints: z.array(z.string()) }).nullable(),
});

export const appFileBody = named(
  'AppFile',
  appFileSchema.omit({ prune: true }),
  "An app as a file (svc.yaml's keys with name and source): secrets as ${KEY} placeholders, defaults left out",
);

export const configChangeSchema = named(
  'ConfigChange',
  z.object({ path: z.string(), before: z.unknown(), after: z.unknown() }),
  'One setting an apply changes, by path (services.web.port, env.KEY); null: absent',
);

const findingSchema = z.object({
  level: z.enum(FINDING_LEVELS),
  service: z.string().optional(),
  key: z.string(),
  message: z.string(),
});

export const detectionSchema = z.object({
  compose_path: z.string().nullable(),
  dockerfile: z.string().nullable(),
  services: z.array(z.string()),
  findings: z.array(findingSchema),
});

export const appUrlSchema = named(
  'AppUrl',
  z.object({
    url: z.string().describe('https:// once a certificate is served for the name, else http://'),
    hostname: z.string(),
    service: z.string().nullable(),
    automatic: z.boolean().describe('A host under the base domain, given to the app without asking'),
    https: z.boolean(),
    status: z.enum(DOMAIN_STATUSES),
  }),
  'Where an app answers: an automatic host or a domain, as a URL',
);

export const lastDeploymentSchema = named(
  'LastDeployment',
  z.object({
    id: z.string(),
    status: z.enum(DEPLOY_STATUSES),
    trigger: z.enum(DEPLOY_TRIGGERS),
    commit: z.string().nullable(),
    commit_subject: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: ts,
    finished_at: ts.nullable(),
  }),
  "An app's newest deployment, as listings show it",
);

export const appListItemSchema = named(
  'AppListItem',
  appSchema.extend({
    urls: z.array(appUrlSchema),
    last_deployment: lastDeploymentSchema.nullable(),
  }),
  'An app with where it answers and its newest deployment',
);
