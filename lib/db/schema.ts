// One interface of table types; timestamps are ISO-8601 UTC strings (they sort as text).
import type { Generated } from 'kysely';

export interface UserTable {
  id: string;
  username: string;
  password_hash: string;
  totp_enabled: number;
  /** Sealed; bound to `user:<id>:totp`. */
  totp_secret: string | null;
  /** Sealed; set by totp/setup, promoted by totp/enable. */
  totp_pending: string | null;
  totp_last_step: number | null;
  created_at: string;
  updated_at: string;
  /** `owner`, `admin`, `deployer` or `viewer` (lib/auth/roles.ts). */
  role: Generated<string>;
  /** JSON array of app ids, or null: every app. */
  app_ids: string | null;
  disabled: Generated<number>;
  /** `<issuer> <subject>` for an operator who signs in with the identity provider. */
  sso_subject: string | null;
  last_login_at: string | null;
}

export interface SessionTable {
  id: string;
  token_hash: string;
  user_id: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  step_up_until: string | null;
}

export interface ApiTokenTable {
  id: string;
  user_id: string;
  name: string;
  token_hash: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  step_up_until: string | null;
  /** JSON array of permission names, or null: every permission of the owner. */
  scopes: string | null;
  /** JSON array of app ids, or null: every app the owner reaches. */
  app_ids: string | null;
}

/** `invite` creates an operator; `reset` sets a new password for an existing one. */
export const INVITATION_KINDS = ['invite', 'reset'] as const;

export interface InvitationTable {
  id: string;
  token_hash: string;
  kind: (typeof INVITATION_KINDS)[number];
  role: string | null;
  app_ids: string | null;
  user_id: string | null;
  created_by: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface RecoveryCodeTable {
  id: Generated<number>;
  user_id: string;
  code_hash: string;
  used_at: string | null;
}

export interface AuditTable {
  id: Generated<number>;
  at: string;
  actor_id: string | null;
  actor: string | null;
  via: string | null;
  action: string;
  target: string | null;
  ip: string | null;
  outcome: number;
  detail: string | null;
  target_kind: string | null;
  target_id: string | null;
  state_before: string | null;
  state_after: string | null;
  /** 1 when before/after were recorded (either may be null: created, deleted). */
  has_state: number | null;
  reverted_at: string | null;
  reverted_by: number | null;
  revert_of: number | null;
  /** `<METHOD> <route pattern>` (OpenAPI form) of the route that caused the entry. */
  route: string | null;
  actor_type: 'user' | 'token' | 'system' | null;
  /** The API token that acted, when one did (actor_id stays its operator). */
  token_id: string | null;
  summary: string | null;
  /** The app the entry concerns (null: instance-wide, or none known). */
  app_id: string | null;
}

export interface SettingTable {
  key: string;
  value: string;
}

export interface AppTable {
  id: string;
  name: string;
  /** JSON of the app's source: {type:'git', repo_url, branch, compose_path?} | {type:'image', image}. */
  source: string;
  status: string;
  created_at: string;
  updated_at: string;
  /** Set when a delete began; a retried DELETE finishes the job. */
  deleting_at: string | null;
  /** JSON {memory_mb?, cpus?, timeout_s?} applied to image builds, or null. */
  build_limits?: string | null;
  /** Idle minutes after which the app's containers stop (it sleeps); null: never. */
  sleep_after_minutes?: number | null;
  /** Since when the app sleeps; null while it is awake. */
  sleeping_at?: string | null;
  /** Set on a preview's own app row: the app it previews (hidden from app listings). */
  parent_app_id?: string | null;
  /** JSON array (exec form) run once per deployment before the new version takes traffic; null: none. */
  release_command?: string | null;
  /** Seconds the release command may run; null: the default. */
  release_timeout_s?: number | null;
}

export interface AppEnvTable {
  app_id: string;
  key: string;
  secret: number;
  /** Sealed, bound to `app:<id>:env:<key>`: every value is sealed, secret or not. */
  sealed: string;
}

export interface AppServiceTable {
  app_id: string;
  name: string;
  port: number | null;
  health_path: string | null;
  /** Cluster mode: replicas (null: 1), placement JSON, the node a volume-backed service is pinned to. */
  replicas?: number | null;
  placement?: string | null;
  pinned_node?: string | null;
  /** Seconds the previous version may drain after a switch (null: the default, 30). */
  drain_s?: number | null;
}

export interface DeploymentTable {
  id: string;
  app_id: string;
  status: string;
  trigger: string;
  ref: string | null;
  commit_sha: string | null;
  commit_subject: string | null;
  /** JSON map service -> image tag used by this deployment (for rollback). */
  images: string | null;
  error: string | null;
  rollback_of: string | null;
  delivery_id: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
  /** 1: a push queued behind its app's active deployment (coalesced; at most one per app). */
  waiting: number;
  /** JSON of what was deployed ({kind:'compose', path, text} | {kind:'dockerfile', path} | {kind:'image', image}). */
  spec: string | null;
  /** The commit a webhook announced (informational; the ref's head at fetch time is deployed). */
  commit_wanted: string | null;
  /** The commit (hex, maybe abbreviated) this deployment must deploy, on `ref`'s history; null: the ref's head. */
  commit_pin: string | null;
  /** JSON map service -> `sha256:...`: the exact image each service ran (a rollback runs these). */
  image_digests: string | null;
  /** 1: pull every image again before deploying (`pull: true`, deploy hooks). */
  pull: number;
  /** JSON list of `<repository>@<digest>` this deployment pulled (the images retention may remove). */
  pulled: string | null;
  /** The username of the operator who asked for it; null for a forge's push. */
  created_by: string | null;
  /** JSON `{file, applied}`: what this deployment took from the repository's svc.yaml (null: no file). */
  config?: string | null;
}

/** Credentials of one container registry; the password is sealed, bound to the row's id. */
export interface RegistryTable {
  id: string;
  /** `host[:port]` as pulls name it; Docker Hub is `docker.io`. */
  host: string;
  username: string;
  password_sealed: string;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
}

/** An app's deploy hook: the URL's token is shown once, only its SHA-256 is kept. */
export interface DeployHookTable {
  id: string;
  app_id: string;
  token_hash: string;
  created_at: string;
  last_used_at: string | null;
}

export interface DeploymentEventTable {
  id: Generated<number>;
  deployment_id: string;
  status: string;
  at: string;
}

export interface DeploymentLogTable {
  deployment_id: string;
  seq: number;
  at: string;
  stream: string;
  line: string;
}

export interface AppWebhookTable {
  app_id: string;
  /** Sealed, bound to `app:<id>:webhook`. */
  secret_sealed: string;
  created_at: string;
}

export interface AppTriggerTable {
  id: string;
  app_id: string;
  event: string;
  pattern: string;
  enabled: number;
  created_at: string;
}

export interface AppSshKeyTable {
  app_id: string;
  public_key: string;
  fingerprint: string;
  /** Sealed, bound to `app:<id>:ssh-key`. */
  private_sealed: string;
  created_at: string;
}

export interface WebhookDeliveryTable {
  app_id: string;
  delivery_id: string;
  received_at: string;
}

export interface WebhookDeliveryLogTable {
  id: Generated<number>;
  app_id: string;
  at: string;
  /** null: a rejected delivery that named no single forge. */
  provider: string | null;
  event: string | null;
  delivery_id: string | null;
  /** Branch or tag name. */
  ref: string | null;
  commit_sha: string | null;
  outcome: string;
  reason: string | null;
  deployment_id: string | null;
}

export interface WebhookPushTable {
  app_id: string;
  /** Full ref (refs/heads/main, refs/tags/v1). */
  ref: string;
  /** '' when the forge sent no previous commit (a new ref). */
  old_sha: string;
  new_sha: string;
  received_at: string;
}

export interface DomainTable {
  id: string;
  /** Normalised (lower case, no trailing dot); unique. */
  hostname: string;
  /** Null: unassigned (or a redirect). */
  app_id: string | null;
  service: string | null;
  /** Overrides the service's port for this domain. */
  port: number | null;
  /** A hostname: the domain answers 308 to https://<redirect_to><uri>. */
  redirect_to: string | null;
  created_at: string;
  updated_at: string;
}

export interface DomainCertificateTable {
  domain_id: string;
  /** The certificate chain (public). */
  cert_pem: string;
  /** Sealed, bound to `domain:<id>:certificate-key`. */
  key_sealed: string;
  issuer: string;
  not_after: string;
  fingerprint256: string;
  created_at: string;
}

/** What the checker last saw of a host (a domain, an automatic host, the control domain). */
export interface HostCheckTable {
  hostname: string;
  /** JSON arrays of addresses. */
  dns_resolved: string | null;
  dns_expected: string | null;
  dns_points_here: number | null;
  dns_error: string | null;
  dns_checked_at: string | null;
  /** The certificate Caddy serves for the name (null: none served). */
  cert_issuer: string | null;
  cert_not_after: string | null;
  cert_fingerprint256: string | null;
  cert_error: string | null;
  cert_checked_at: string | null;
  /** Since when the host has been handed to the CA without a certificate being served. */
  issuing_since: string | null;
  /** JSON of the events already published for this host, so each is published once. */
  notified: string | null;
  updated_at: string;
}

export interface ProxyUpstreamTable {
  app_id: string;
  service: string;
  /** JSON array of container addresses (IPs) the service's routes dial. */
  addresses: string;
  updated_at: string;
}

export interface RequestSeriesTable {
  /** Bucket width in seconds: 10, 60 or 3600. */
  res: number;
  /** '' for the host-wide series. */
  app_id: string;
  service: string;
  /** Bucket start, epoch seconds. */
  t: number;
  requests: number;
  errors_4xx: number;
  errors_5xx: number;
  bytes_out: number;
  /** Latency histogram: little-endian uint32 counts over fixed bounds (lib/util/histogram.ts). */
  hist: Buffer;
}

export interface HostVitalsTable {
  res: number;
  t: number;
  samples: number;
  cpu_sum: number;
  load1_sum: number;
  mem_used_sum: number;
  mem_total_sum: number;
  disk_used_sum: number;
  disk_total_sum: number;
}

export interface AppDatabaseTable {
  id: string;
  app_id: string;
  engine: string;
  version: string;
  name: string;
  username: string;
  /** Sealed, bound to `db:<id>:password`. */
  password_sealed: string;
  host: string;
  port: number;
  env_var: string;
  container: string;
  volume: string;
  status: string;
  error: string | null;
  created_at: string;
}

export interface BackupConfigTable {
  id: string;
  app_id: string;
  /** JSON: {type:'database', database_id} | {type:'volume', volume}. */
  source: string;
  schedule: string;
  keep_last: number;
  /** JSON of the destination without its secret key. */
  destination: string;
  /** S3 secret access key, sealed, bound to `backup:<id>:s3`. */
  secret_sealed: string | null;
  enabled: number;
  verify_after_run: number;
  /** The last schedule slot the scheduler handled: a slot is run at most once, across restarts. */
  last_scheduled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface BackupRunTable {
  id: string;
  backup_id: string;
  app_id: string;
  status: string;
  trigger: string;
  /** Local file name (under <data>/backups) or S3 key of the stored artifact. */
  artifact: string | null;
  artifact_removed: number;
  size_bytes: number | null;
  sha256: string | null;
  error: string | null;
  verified_at: string | null;
  verify_error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface BackupRestoreTable {
  id: string;
  run_id: string;
  app_id: string;
  status: string;
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface NotificationChannelTable {
  id: string;
  kind: string;
  name: string;
  url_sealed: string;
  url_hint: string;
  /** JSON array of event names. */
  events: string;
  enabled: number;
  /** JSON {at, ok, status, error} of the newest delivery. */
  last_delivery: string | null;
  /** JSON of the kind's non-secret options (an email channel's recipients); null for the others. */
  options: string | null;
  /** A webhook channel's signing secret, sealed, bound to `notification_channels:<id>:secret`. */
  secret_sealed: string | null;
  created_at: string;
  updated_at: string;
}

export interface NotificationDeliveryTable {
  id: Generated<number>;
  channel_id: string;
  at: string;
  event: string;
  ok: number;
  status: number | null;
  error: string | null;
  attempts: number;
}

export interface ResourceSeriesTable {
  /** Bucket width in seconds (60). */
  res: number;
  app_id: string;
  service: string;
  /** Bucket start, epoch seconds. */
  t: number;
  samples: number;
  /** Sums over the samples, for the average: CPU percent of one core, memory bytes. */
  cpu_sum: number;
  mem_sum: number;
  /** The highest memory limit seen in the bucket (bytes). */
  mem_limit: number;
  /** Restarts seen in the bucket. */
  restarts: number;
}

export interface AlertRuleTable {
  id: string;
  name: string;
  /** Null: a rule on the host (every app). */
  app_id: string | null;
  metric: string;
  op: string;
  threshold: number;
  for_s: number;
  /** JSON array of notification channel ids ([]: every channel subscribed to the event). */
  channels: string;
  enabled: number;
  /** `ok` or `firing`. */
  state: string;
  /** When the rule entered its state. */
  since: string | null;
  /** Since when the rule's state is contradicted (the condition holds while ok, is gone while firing). */
  pending_since: string | null;
  last_value: number | null;
  evaluated_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AlertEventTable {
  id: Generated<number>;
  /** Null once the rule is deleted (the history stays). */
  rule_id: string | null;
  rule_name: string;
  app_id: string | null;
  metric: string;
  /** `fired` or `resolved`. */
  kind: string;
  value: number | null;
  threshold: number;
  /** What the value was measured on (a service, a host name), for the message. */
  detail: string | null;
  at: string;
  /** `pending` until its notification went out (the outbox), then `sent`. */
  notify_state: string;
  notified_at: string | null;
}

export interface LogDrainTable {
  id: string;
  name: string;
  kind: string;
  /** Sealed, bound to `log_drains:<id>:url`. */
  url_sealed: string;
  url_hint: string;
  /** JSON array of app ids; null: every app. */
  app_ids: string | null;
  /** JSON object of header -> value, sealed, bound to `log_drains:<id>:headers`. */
  headers_sealed: string | null;
  /** JSON array of the header names (shown; the values never are). */
  header_names: string;
  enabled: number;
  /** JSON {at, ok, status, error, lines} of the newest delivery attempt. */
  last_delivery: string | null;
  /** Lines delivered and lines dropped since the drain was made. */
  delivered: number;
  dropped: number;
  created_at: string;
  updated_at: string;
}

/** The instance backup's one configuration row (id `instance`), like an app's backup config without a source. */
export interface InstanceBackupTable {
  id: string;
  schedule: string;
  keep_last: number;
  destination: string;
  secret_sealed: string | null;
  enabled: number;
  last_scheduled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface InstanceBackupRunTable {
  id: string;
  status: string;
  trigger: string;
  artifact: string | null;
  artifact_removed: number;
  size_bytes: number | null;
  sha256: string | null;
  error: string | null;
  /** What the run could not include (Caddy's storage unreadable, say), for the operator. */
  notes: string | null;
  verified_at: string | null;
  verify_error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface PreviewSettingsTable {
  app_id: string;
  enabled: number;
  from_forks: number;
  ttl_hours: number;
  max: number;
  /** JSON array of the app's variable names a preview receives. */
  inherit_env: string;
  database: string;
  /** Idle minutes after which a preview sleeps (null: never); applied to each preview's app row. */
  sleep_after_minutes?: number | null;
  updated_at: string;
}

export interface PreviewEnvTable {
  app_id: string;
  key: string;
  secret: number;
  /** Sealed, bound to `app:<id>:preview-env:<key>`. */
  sealed: string;
}

export interface PreviewTable {
  id: string;
  app_id: string;
  target_app_id: string;
  number: number;
  title: string | null;
  branch: string;
  commit_sha: string | null;
  deployment_id: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export interface JobTable {
  id: string;
  app_id: string;
  name: string;
  /** 5-field cron expression, read in `timezone`. */
  schedule: string;
  timezone: string;
  /** JSON array of strings (exec form). */
  command: string;
  /** null: the app's main service. */
  service: string | null;
  timeout_s: number;
  concurrency: string;
  enabled: number;
  /** The last due time handled (run or recorded as skipped); null: none since it was created. */
  last_scheduled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface JobRunTable {
  id: string;
  app_id: string;
  /** null: a one-off command or a release command. */
  job_id: string | null;
  trigger: string;
  status: string;
  reason: string | null;
  /** JSON array of strings (exec form). */
  command: string;
  service: string | null;
  /** The deployment whose image and environment it runs. */
  deployment_id: string | null;
  /** The image id it runs (or, on a swarm, the reference its service runs). */
  image: string | null;
  /** Its container on one host, or its job service on a swarm. */
  container_id: string | null;
  service_id: string | null;
  exit_code: number | null;
  timeout_s: number;
  /** The due time of a scheduled run. */
  scheduled_for: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface RunLogTable {
  run_id: string;
  seq: number;
  at: string;
  stream: string;
  line: string;
}

export interface Database {
  jobs: JobTable;
  job_runs: JobRunTable;
  run_logs: RunLogTable;
  resource_series: ResourceSeriesTable;
  alert_rules: AlertRuleTable;
  alert_events: AlertEventTable;
  log_drains: LogDrainTable;
  preview_settings: PreviewSettingsTable;
  preview_env: PreviewEnvTable;
  previews: PreviewTable;
  instance_backup: InstanceBackupTable;
  instance_backup_runs: InstanceBackupRunTable;
  notification_channels: NotificationChannelTable;
  notification_deliveries: NotificationDeliveryTable;
  app_databases: AppDatabaseTable;
  backup_configs: BackupConfigTable;
  backup_runs: BackupRunTable;
  backup_restores: BackupRestoreTable;
  domains: DomainTable;
  domain_certificates: DomainCertificateTable;
  host_checks: HostCheckTable;
  proxy_upstreams: ProxyUpstreamTable;
  request_series: RequestSeriesTable;
  host_vitals: HostVitalsTable;
  app_webhooks: AppWebhookTable;
  app_triggers: AppTriggerTable;
  app_ssh_keys: AppSshKeyTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_pushes: WebhookPushTable;
  webhook_delivery_log: WebhookDeliveryLogTable;
  apps: AppTable;
  app_env: AppEnvTable;
  app_services: AppServiceTable;
  deployments: DeploymentTable;
  deployment_events: DeploymentEventTable;
  deployment_logs: DeploymentLogTable;
  registries: RegistryTable;
  deploy_hooks: DeployHookTable;
  users: UserTable;
  sessions: SessionTable;
  api_tokens: ApiTokenTable;
  invitations: InvitationTable;
  recovery_codes: RecoveryCodeTable;
  audit: AuditTable;
  settings: SettingTable;
}
