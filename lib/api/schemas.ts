// The wire shapes the API answers with, as zod schemas: route() checks handlers against them at
// compile time and the OpenAPI document (scripts/gen-openapi) is generated from them. Named shapes
// are registered in `components` and become `#/components/schemas/<id>` in the document.
import { z } from 'zod';
import { NOTIFY_EVENTS } from '../notify/message.js';
import { POSTURE_CODES, POSTURE_STATUSES } from '../security/posture.js';
import { PERMISSION_NAMES, type Permission } from '../auth/roles.js';

export const components = z.registry<{ id: string; description?: string }>();
const named = <T extends z.ZodType>(id: string, schema: T, description?: string): T => {
  components.add(schema, description ? { id, description } : { id });
  return schema;
};

const ts = z.string().describe('ISO-8601 UTC timestamp');

export const errorSchema = named(
  'Error',
  z.object({
    error: z.string().describe('A human sentence'),
    code: z.enum([
      'bad_request',
      'unauthorized',
      'invalid_credentials',
      'forbidden',
      'csrf_mismatch',
      'step_up_required',
      'not_found',
      'method_not_allowed',
      'conflict',
      'precondition_failed',
      'payload_too_large',
      'rate_limited',
      'internal_error',
      'service_unavailable',
      'not_detectable',
    ]),
    details: z.array(z.looseObject({ field: z.string().optional(), message: z.string() })).optional(),
  }),
  'The error body of every failed request',
);

export const userSchema = named(
  'User',
  z.object({
    id: z.string(),
    username: z.string(),
    totp_enabled: z.boolean(),
    role: z.string().describe('owner, admin, deployer or viewer'),
    /** null: every app. */
    app_ids: z.array(z.string()).nullable(),
    sso: z.boolean().describe('Signs in with the identity provider (no password)'),
  }),
);

export const buildSettingSchema = named(
  'BuildSetting',
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('auto') }),
    z.object({ type: z.literal('dockerfile'), path: z.string().optional() }),
    z.object({ type: z.literal('compose'), path: z.string().optional() }),
    z.object({
      type: z.literal('stack'),
      stack: z.enum(['node', 'python', 'go', 'static', 'php', 'ruby']),
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
  z.object({ memory_mb: z.number().optional(), cpus: z.number().optional(), timeout_s: z.number().optional() }),
  'Bounds of one image build; an absent field is unbounded',
);

export const buildPlanSchema = named(
  'BuildPlan',
  z.object({
    stack: z.enum(['node', 'python', 'go', 'static', 'php', 'ruby']),
    detected_from: z.array(z.string()).describe('Repository files the decision rests on'),
    runtime: z.object({ name: z.string(), version: z.string(), image: z.string() }),
    images: z.array(z.string()).describe('Every image reference the Dockerfile names, as written (before SVC_IMAGE_MAP)'),
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
    z.object({ type: z.literal('git'), repo_url: z.string(), branch: z.string(), compose_path: z.string().optional(), build: buildSettingSchema.optional() }),
    z.object({ type: z.literal('image'), image: z.string() }),
    z.object({ type: z.literal('compose'), compose: z.string() }),
  ]),
);

export const appSchema = named(
  'App',
  z.object({
    id: z.string(),
    name: z.string(),
    source: appSourceSchema,
    status: z.enum(['created', 'deploying', 'running', 'degraded', 'stopped', 'failed', 'crash_loop', 'oom']),
    build_limits: buildLimitsSchema.nullable(),
    created_at: ts,
    updated_at: ts,
  }),
);

export const deploymentSchema = named(
  'Deployment',
  z.object({
    id: z.string(),
    app_id: z.string(),
    status: z.enum(['queued', 'cloning', 'building', 'deploying', 'health_checking', 'succeeded', 'failed', 'canceled', 'interrupted']),
    trigger: z.enum(['manual', 'push', 'tag', 'rollback']),
    ref: z.string().nullable(),
    commit: z.string().nullable(),
    commit_subject: z.string().nullable(),
    image: z.string().nullable(),
    images: z.record(z.string(), z.string()).nullable(),
    error: z.string().nullable(),
    rollback_of: z.string().nullable(),
    delivery_id: z.string().nullable(),
    waiting: z.boolean(),
    created_at: ts,
    started_at: ts.nullable(),
    finished_at: ts.nullable(),
  }),
);

export const deploymentBody = named('DeploymentBody', z.object({ deployment: deploymentSchema }));

export const envItemSchema = named('EnvItem', z.object({ key: z.string(), secret: z.boolean(), value: z.string().nullable() }));

export const serviceSchema = named(
  'Service',
  z.object({
    name: z.string(),
    image: z.string(),
    status: z.string(),
    health: z.string().nullable(),
    port: z.number().int().nullable(),
    health_path: z.string().nullable(),
    published_ports: z.array(z.object({ host_ip: z.string(), host_port: z.number().int(), container_port: z.number().int(), protocol: z.string() })),
  }),
);

export const serviceSettingsSchema = z.object({ name: z.string(), port: z.number().int().nullable(), health_path: z.string().nullable() });

export const appSpecSchema = named(
  'AppSpec',
  z.object({
    version: z.literal(1),
    name: z.string(),
    source: appSourceSchema,
    services: z.array(z.object({ name: z.string(), port: z.number().int().nullable(), health_path: z.string().nullable() })),
    env: z.array(z.object({ key: z.string(), secret: z.boolean(), value: z.string().nullable() })),
    triggers: z.array(z.object({ event: z.enum(['push', 'tag', 'pull_request']), pattern: z.string(), enabled: z.boolean() })),
    domains: z.array(z.unknown()),
  }),
  'The portable description of an app (never a secret value)',
);

const findingSchema = z.object({ level: z.enum(['error', 'warning']), service: z.string().optional(), key: z.string(), message: z.string() });

export const detectionSchema = z.object({ compose_path: z.string().nullable(), dockerfile: z.string().nullable(), services: z.array(z.string()), findings: z.array(findingSchema) });

export const triggerSchema = named('Trigger', z.object({ id: z.string(), event: z.enum(['push', 'tag', 'pull_request']), pattern: z.string(), enabled: z.boolean() }));

export const webhookDeliverySchema = named(
  'WebhookDelivery',
  z.object({
    id: z.string(),
    at: ts,
    provider: z.string().nullable().describe('The forge; null for a refused delivery that named none'),
    event: z.string().nullable(),
    delivery_id: z.string().nullable().describe("The forge's own delivery id, when it sent one"),
    ref: z.string().nullable().describe('Branch or tag name'),
    commit: z.string().nullable(),
    outcome: z.enum(['deployed', 'ignored', 'duplicate', 'rejected', 'preview']),
    reason: z.string().nullable(),
    deployment_id: z.string().nullable(),
  }),
  "What one delivery to the app's webhook came to (never its payload nor its signature)",
);

export const publicKeySchema = named('DeployKey', z.object({ public_key: z.string(), fingerprint: z.string(), created_at: ts }));

export const logLineSchema = z.object({ seq: z.number().int(), at: ts, stream: z.string(), line: z.string() });

export const auditEntrySchema = named(
  'AuditEntry',
  z.object({
    id: z.string(),
    at: ts,
    actor: z
      .object({
        type: z.enum(['user', 'token', 'system']),
        id: z.string().nullable(),
        name: z.string().nullable(),
        owner_id: z.string().nullable().optional().describe('A token: the id of the operator it acts for'),
      })
      .describe(
        "user: a session (or a sign-in attempt: id null when no operator matched); token: an API token, its id and name, and its owner's id; " +
          "system: no operator (a forge's webhook delivery, the host's `svc` CLI), named",
      ),
    action: z.string().describe('`<METHOD> <route pattern>` of the route that caused the entry, as in the OpenAPI paths: `PUT /api/apps/{id}/env`'),
    target: z.object({ type: z.string().describe('app, service, domain, user, session, api_token, notification_channel, instance, audit_entry...'), id: z.string().nullable() }),
    ip: z.string().nullable(),
    outcome: z.enum(['ok', 'error']).describe('ok: answered 1xx-3xx; error otherwise (`status` has the code)'),
    summary: z.string().describe("A short sentence: the route's summary (or the event's), with the target's current name"),
    revertible: z.boolean(),
    reverted_at: ts.nullable(),
    event: z.string().nullable().describe('The finer event when the route does not say it all (`auth.totp_failed` on POST /api/auth/totp)'),
    status: z.number().int().describe('The HTTP status of the answer (101: a WebSocket opened; 500: background work failed)'),
    user: z.object({ id: z.string(), username: z.string() }).nullable().describe("The operator behind the actor (a token's owner); null for system entries"),
    via: z.string().nullable().describe('How the actor authenticated: session, token, password, totp, setup, webhook'),
    detail: z.record(z.string(), z.unknown()).nullable(),
    state_kind: z.string().nullable().describe('The kind of state recorded (app_env, domain...); null: not diffable'),
    reverted_by: z.string().nullable(),
    revert_of: z.string().nullable(),
    app_id: z.string().nullable().describe('The app the entry concerns; null: instance-wide'),
  }),
);

/** A permission name (lib/auth/roles.ts): what a token's scopes and `GET /api/auth/me` list. */
export const permissionSchema = named('Permission', z.enum(PERMISSION_NAMES as [Permission, ...Permission[]]));

export const apiTokenSchema = named(
  'ApiToken',
  z.object({
    id: z.string(),
    name: z.string(),
    created_at: ts,
    expires_at: ts.nullable(),
    last_used_at: ts.nullable(),
    scopes: z.array(permissionSchema).nullable(),
    app_ids: z.array(z.string()).nullable(),
  }),
);

const roleSchema = z.enum(['owner', 'admin', 'deployer', 'viewer']);

export const operatorSchema = named(
  'Operator',
  z.object({
    id: z.string(),
    username: z.string(),
    role: roleSchema,
    app_ids: z.array(z.string()).nullable().describe('null: every app; a list limits a deployer or viewer to those apps'),
    totp_enabled: z.boolean(),
    disabled: z.boolean(),
    sso: z.boolean().describe('Signs in with the OpenID Connect provider'),
    created_at: ts,
    last_login_at: ts.nullable(),
  }),
);

export const createdInvitationSchema = named(
  'CreatedInvitation',
  z.object({
    id: z.string(),
    kind: z.enum(['invite', 'reset']),
    role: roleSchema.nullable(),
    app_ids: z.array(z.string()).nullable(),
    expires_at: ts,
    url: z.string().describe('The single-use link; shown only in this answer'),
  }),
);

export const invitationSchema = named(
  'Invitation',
  z.object({
    id: z.string(),
    kind: z.enum(['invite', 'reset']),
    role: roleSchema.nullable(),
    app_ids: z.array(z.string()).nullable(),
    user_id: z.string().nullable().describe('A reset link: the operator whose password it sets'),
    username: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: ts,
    expires_at: ts,
    used_at: ts.nullable(),
    status: z.enum(['pending', 'used', 'expired']),
  }),
);

export const sessionSchema = named(
  'Session',
  z.object({ id: z.string(), created_at: ts, last_seen_at: ts, expires_at: ts, ip: z.string().nullable(), user_agent: z.string().nullable(), current: z.boolean() }),
);

export const postureItemSchema = named(
  'PostureItem',
  z.object({
    code: z.enum(POSTURE_CODES),
    status: z.enum(POSTURE_STATUSES),
    title: z.string(),
    reason: z.string(),
    fix: z.string(),
    app: z.string().optional(),
    service: z.string().optional(),
  }),
);

const unavailable = z.object({ available: z.literal(false), reason: z.string() });

export const firewallStateSchema = z.union([
  z.object({
    available: z.literal(true),
    stale: z.boolean(),
    generated_at: ts,
    backend: z.enum(['ufw', 'nftables', 'iptables']).nullable(),
    active: z.boolean(),
    rules: z.array(z.string()),
  }),
  unavailable,
]);

export const fail2banStateSchema = z.union([
  z.object({
    available: z.literal(true),
    stale: z.boolean(),
    generated_at: ts,
    jails: z.array(z.object({ name: z.string(), currently_banned: z.number().int(), total_banned: z.number().int(), banned_ips: z.array(z.string()) })),
  }),
  unavailable,
]);

export const trafficSnapshotSchema = named(
  'TrafficSnapshot',
  z.object({
    enabled: z.boolean(),
    window_seconds: z.number(),
    request_threshold: z.number(),
    error_threshold: z.number(),
    tracked_ips: z.number().int(),
    top_talkers: z.array(z.object({ ip: z.string(), requests: z.number().int(), errors: z.number().int(), last_seen: ts })),
    recent_requests: z.array(z.object({ at: ts, ip: z.string(), host: z.string(), method: z.string(), path: z.string(), status: z.number().int() })),
    recent_anomalies: z.array(
      z.object({
        at: ts,
        ip: z.string(),
        kind: z.enum(['request_spike', 'error_surge']),
        count: z.number().int(),
        window_seconds: z.number(),
        detail: z.string(),
        notified: z.boolean(),
      }),
    ),
  }),
);

export const items = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });
export const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), next_cursor: z.string().optional() });

export const addonParamSchema = z.object({ key: z.string(), label: z.string(), default: z.string().nullable(), secret: z.boolean(), generated: z.boolean() });
const addonFields = {
  id: z.string(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  services: z.array(z.string()),
  images: z.array(z.string()),
  footprint_mb: z.number(),
  params: z.array(addonParamSchema),
};
export const addonSchema = named('Addon', z.object(addonFields), 'A vetted compose template: what it runs, its footprint and its parameters');
export const addonWithComposeSchema = named('AddonWithCompose', z.object({ ...addonFields, compose: z.string() }), 'An add-on read alone: with its compose template');

const backupSourceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('database'), database_id: z.string() }),
  z.object({ type: z.literal('volume'), volume: z.string().describe("The volume's name as the app's compose file writes it") }),
]);
const backupDestinationSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('local') }),
  z.object({
    type: z.literal('s3'),
    endpoint: z.string(),
    region: z.string(),
    bucket: z.string(),
    prefix: z.string(),
    access_key_id: z.string(),
    path_style: z.boolean(),
    secret_set: z.boolean().optional().describe('The secret key is sealed and never returned'),
  }),
]);
export const backupRunSchema = named(
  'BackupRun',
  z.object({
    id: z.string(),
    backup_id: z.string(),
    status: z.string().describe('running | succeeded | failed | interrupted'),
    trigger: z.string(),
    started_at: ts,
    finished_at: ts.nullable(),
    size_bytes: z.number().nullable(),
    sha256: z.string().nullable().describe("Of the stored (encrypted) artifact's bytes"),
    error: z.string().nullable(),
    verified_at: ts.nullable(),
    verify_error: z.string().nullable(),
    artifact_removed: z.boolean().describe('Retention removed the artifact: download and restore answer 410'),
  }),
  'One run of a backup',
);
export const backupConfigSchema = named(
  'BackupConfig',
  z.object({
    id: z.string(),
    app_id: z.string(),
    source: backupSourceSchema,
    schedule: z.string().describe('5-field cron expression, UTC'),
    keep_last: z.number().int(),
    destination: backupDestinationSchema,
    enabled: z.boolean(),
    verify_after_run: z.boolean(),
    last_run: backupRunSchema.nullable(),
    created_at: ts,
    updated_at: ts,
  }),
  'A backup configuration of an app: what, when, how many kept, where, and its last run',
);
export const instanceBackupRunSchema = named(
  'InstanceBackupRun',
  z.object({
    id: z.string(),
    status: z.string().describe('running | succeeded | failed | interrupted'),
    trigger: z.string(),
    started_at: ts,
    finished_at: ts.nullable(),
    size_bytes: z.number().nullable(),
    sha256: z.string().nullable().describe("Of the stored (encrypted) artifact's bytes"),
    error: z.string().nullable(),
    notes: z.string().nullable().describe('What the run could not include (Caddy storage not readable here, say)'),
    verified_at: ts.nullable(),
    verify_error: z.string().nullable(),
    artifact_removed: z.boolean(),
  }),
  'One run of the instance backup (control database, Caddy certificates; never the master key)',
);
export const instanceBackupSchema = named(
  'InstanceBackup',
  z.object({
    schedule: z.string().describe('5-field cron expression, UTC'),
    keep_last: z.number().int(),
    destination: backupDestinationSchema,
    enabled: z.boolean(),
    last_run: instanceBackupRunSchema.nullable(),
    updated_at: ts,
  }),
  'The instance backup configuration',
);
export const restoreSchema = named(
  'Restore',
  z.object({ id: z.string(), run_id: z.string(), status: z.string().describe('running | succeeded | failed'), error: z.string().nullable(), started_at: ts, finished_at: ts.nullable() }),
  'A restore of a backup run into its source',
);
export const backupsOverviewSchema = named(
  'BackupsOverview',
  z.object({
    configs: z.array(backupConfigSchema),
    failed_last_7d: z.array(z.object({ ...backupRunSchema.shape, app_id: z.string() })),
    uncovered: z.array(z.object({ app_id: z.string(), service: z.string(), volume: z.string(), database_id: z.string().optional() })),
  }),
  'Backup configurations, failures of the last 7 days and what no configuration covers',
);
export const databaseSchema = named(
  'Database',
  z.object({
    id: z.string(),
    app_id: z.string(),
    engine: z.enum(['postgres', 'mariadb', 'redis']),
    version: z.string(),
    name: z.string(),
    username: z.string(),
    host: z.string(),
    port: z.number().int(),
    env_var: z.string(),
    status: z.enum(['provisioning', 'ready', 'error']),
    error: z.string().nullable(),
    size_bytes: z.number().nullable(),
    created_at: ts,
  }),
  'A managed database of an app (the password is sealed; the connection URL is a secret env var of the app)',
);
export const databaseEngineSchema = named(
  'DatabaseEngine',
  z.object({
    engine: z.enum(['postgres', 'mariadb', 'redis']),
    versions: z.array(z.string()),
    default_version: z.string(),
    images: z.record(z.string(), z.string()).describe('Version -> image reference'),
  }),
  'A database engine that can be provisioned, with its pinned versions',
);
export const proxySummarySchema = named(
  'ProxySummary',
  z.object({ synced: z.boolean(), error: z.string().optional().describe('Why the last sync did not apply (the next one retries)') }),
  'Whether the proxy holds the configuration computed from the current rows',
);
const requestPointSchema = z.object({
  t: ts,
  requests: z.number(),
  errors_4xx: z.number(),
  errors_5xx: z.number(),
  bytes_out: z.number(),
  p50_ms: z.number(),
  p95_ms: z.number(),
  p99_ms: z.number(),
});
const seriesFields = {
  range: z.enum(['1h', '6h', '24h', '7d', '30d']),
  step_seconds: z.number().int(),
  points: z.array(requestPointSchema).max(500).describe('Oldest first, aligned to step_seconds, zero-filled gaps'),
};
export const metricsSeriesSchema = named('MetricsSeries', z.object(seriesFields), "Requests through the proxy to an app's hosts, over a range");
export const hostMetricsSchema = named(
  'HostMetrics',
  z.object({
    ...seriesFields,
    vitals: z
      .array(
        z.object({
          t: ts,
          cpu_percent: z.number(),
          mem_used_bytes: z.number(),
          mem_total_bytes: z.number(),
          disk_used_bytes: z.number(),
          disk_total_bytes: z.number(),
          load1: z.number(),
        }),
      )
      .max(500)
      .describe('Oldest first, one per step that has a sample: a step without one is absent, never zeros'),
  }),
  "Every request through the proxy (known hosts or not) and the host's vitals, over a range",
);
export const instanceInfoSchema = named(
  'InstanceInfo',
  z.object({
    version: z.string(),
    started_at: ts,
    uptime_seconds: z.number().int(),
    node_version: z.string(),
    engine: z.object({ reachable: z.boolean(), version: z.string().nullable() }),
    proxy: z.object({ reachable: z.boolean(), version: z.string().nullable() }),
    database: z.object({ dialect: z.literal('sqlite'), size_bytes: z.number() }),
    base_domain: z.string().nullable(),
    control_domain: z.string().nullable(),
    exposure: z.enum(['local', 'public']),
    features: z.object({ shell: z.boolean(), security_agent: z.boolean(), traffic_monitor: z.boolean() }),
  }),
  'Versions, uptime and the engine of this instance',
);
const diskKind = z.object({ count: z.number().int(), size_bytes: z.number(), reclaimable_bytes: z.number() });
export const diskUsageSchema = named(
  'DiskUsage',
  z.object({ images: diskKind, containers: diskKind, volumes: diskKind, build_cache: diskKind, total_bytes: z.number() }),
  'Engine disk usage by kind: images, containers, volumes, build cache',
);
export const pruneResultSchema = named(
  'PruneResult',
  z.object({ reclaimed_bytes: z.number(), images_deleted: z.number().int(), containers_deleted: z.number().int(), build_cache_bytes: z.number() }),
  "What a prune removed (never an app's images or volumes)",
);
export const resetResultSchema = named(
  'ResetResult',
  z.object({ removed: z.array(z.object({ id: z.string(), name: z.string() })), failed: z.array(z.object({ id: z.string(), name: z.string(), error: z.string() })) }),
  'The apps a reset removed, and those it could not',
);
export const dnsCheckSchema = named(
  'DnsCheck',
  z.object({ host: z.string(), expected: z.array(z.string()), resolved: z.array(z.string()), points_here: z.boolean(), error: z.string().optional() }),
  'Where a hostname resolves, against the addresses this host answers on',
);
export const baseDomainSchema = named(
  'BaseDomain',
  z.object({ base_domain: z.string().nullable(), control_domain: z.string().nullable(), proxy: proxySummarySchema }),
  'The base domain of the automatic hosts, the control domain that follows from it, and the proxy',
);

const domainFields = {
  hostname: z.string(),
  status: z.enum(['unassigned', 'awaiting_dns', 'issuing', 'active', 'error']),
  status_detail: z.string(),
  certificate: z.object({ source: z.enum(['acme', 'uploaded']), issuer: z.string(), not_after: ts }).nullable(),
  dns: z.object({ addresses: z.array(z.string()), points_here: z.boolean(), checked_at: ts }).nullable(),
};
export const domainSchema = named(
  'Domain',
  z.object({
    id: z.string(),
    ...domainFields,
    app_id: z.string().nullable(),
    service: z.string().nullable(),
    port: z.number().int().nullable(),
    redirect_to: z.string().nullable(),
    created_at: ts,
    updated_at: ts,
  }),
  'A domain: the app service it serves or the URL it redirects to, its DNS and certificate',
);
export const automaticHostSchema = named(
  'AutomaticHost',
  z.object({ managed: z.literal(true), ...domainFields, app_id: z.string(), service: z.string(), port: z.number().int(), redirect_to: z.null() }),
  'A host under the base domain given to every app service automatically (no id: it follows the app)',
);
export const domainListItemSchema = z.union([domainSchema, automaticHostSchema]);

export const notificationChannelSchema = named(
  'NotificationChannel',
  z.object({
    id: z.string(),
    kind: z.enum(['discord', 'slack']),
    name: z.string(),
    url_hint: z.string().describe('The URL is sealed and never returned'),
    events: z.array(z.enum(NOTIFY_EVENTS)),
    enabled: z.boolean(),
    last_delivery: z.object({ at: ts, ok: z.boolean(), status: z.number().int().nullable(), error: z.string().nullable() }).nullable(),
    created_at: ts,
    updated_at: ts,
  }),
);
export const notificationDeliverySchema = named(
  'NotificationDelivery',
  z.object({ at: ts, event: z.string(), ok: z.boolean(), status: z.number().int().nullable(), error: z.string().nullable(), attempts: z.number().int() }),
);

export const auditDiffSchema = named(
  'AuditDiff',
  z.object({
    rows: z.array(
      z.object({
        field: z.string(),
        status: z.enum(['added', 'removed', 'changed', 'unchanged']),
        before: z.unknown().optional(),
        after: z.unknown().optional(),
        masked: z.boolean().describe('A secret: its values are never shown'),
      }),
    ),
    changed_since: z.boolean().describe('The target changed after this entry'),
  }),
);

export const previewSchema = named(
  'Preview',
  z.object({
    id: z.string(),
    app_id: z.string(),
    number: z.number().int(),
    title: z.string().nullable(),
    branch: z.string(),
    commit: z.string().nullable(),
    host: z.string().nullable().describe('pr-<number>-<app>.<base domain>; null without a base domain'),
    url: z.string().nullable(),
    status: z.string().describe("As an app's: created, deploying, running, degraded, stopped, failed, sleeping..."),
    deployment_id: z.string().nullable(),
    sleeping: z.boolean(),
    created_at: ts,
    updated_at: ts,
    expires_at: ts,
  }),
);
export const previewBody = named('PreviewBody', z.object({ preview: previewSchema }));

export const previewSettingsSchema = named(
  'PreviewSettings',
  z.object({
    enabled: z.boolean(),
    from_forks: z.boolean(),
    ttl_hours: z.number().int(),
    max: z.number().int(),
    inherit_env: z.array(z.string()),
    database: z.enum(['none', 'empty', 'latest_backup']),
  }),
);
