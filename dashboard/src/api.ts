// Every call the dashboard makes to the control plane goes through this module, so that it can
// be swapped for the client generated from the OpenAPI document without touching the pages.
// Cookie session + X-CSRF-Token on writes (CONTRACT.md); a `step_up_required` answer asks the
// registered step-up handler and retries the call once.

export interface User {
  id: string;
  username: string;
  totp_enabled: boolean;
}

export type AppStatus = 'created' | 'deploying' | 'running' | 'degraded' | 'stopped' | 'failed';
export type AppSource = { type: 'git'; repo_url: string; branch: string; compose_path?: string } | { type: 'image'; image: string };

export interface App {
  id: string;
  name: string;
  source: AppSource;
  status: AppStatus;
  created_at: string;
  updated_at: string;
}

export interface Service {
  name: string;
  image: string | null;
  status: string;
  health: string | null;
  port: number | null;
  health_path: string | null;
  published_ports: unknown[];
}

export interface EnvVar {
  key: string;
  secret: boolean;
  value: string | null;
}

export type DeploymentStatus = 'queued' | 'cloning' | 'building' | 'deploying' | 'health_checking' | 'succeeded' | 'failed' | 'canceled' | 'interrupted';
export const TERMINAL: readonly DeploymentStatus[] = ['succeeded', 'failed', 'canceled', 'interrupted'];

export interface Deployment {
  id: string;
  app_id: string;
  app?: string;
  status: DeploymentStatus;
  trigger: 'manual' | 'push' | 'tag' | 'rollback';
  ref: string | null;
  commit: string | null;
  commit_subject?: string | null;
  image: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface LogLine {
  seq: number;
  at: string;
  stream: string;
  line: string;
}

export interface ApiToken {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

export interface NewApiToken {
  id: string;
  name: string;
  token: string;
  created_at: string;
  expires_at: string | null;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: { id: string | null; username: string | null; via: string | null };
  action: string;
  target: string | null;
  ip: string | null;
  outcome: number | string;
  detail: Record<string, unknown> | null;
}

export interface PostureItem {
  code: string;
  status: 'ok' | 'warning' | 'error' | 'info';
  title: string;
  reason: string;
  fix: string;
  app?: string;
  service?: string;
}

export interface Items<T> {
  items: T[];
  next_cursor?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Array<{ field?: string; message?: string }>,
  ) {
    super(message);
  }
}

/** Asks the operator to step up (a dialog); resolves true once `POST /api/auth/step-up` succeeded. */
export type StepUpHandler = () => Promise<boolean>;
let stepUpHandler: StepUpHandler | null = null;
export function setStepUpHandler(h: StepUpHandler | null): void {
  stepUpHandler = h;
}

let unauthorizedHandler: (() => void) | null = null;
/** Called when an authenticated call answers 401 (session expired or revoked). */
export function setUnauthorizedHandler(h: (() => void) | null): void {
  unauthorizedHandler = h;
}

function csrfToken(): string | null {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === 'svc_csrf') return decodeURIComponent(v.join('='));
  }
  return null;
}

const seg = encodeURIComponent;

async function call<T>(method: string, path: string, body?: unknown, opts: { retried?: boolean; quiet401?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') {
    const csrf = csrfToken();
    if (csrf) headers['x-csrf-token'] = csrf;
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, 'network_error', 'The control plane cannot be reached');
  }
  const text = await res.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (res.ok) return data as T;
  const err = new ApiError(res.status, typeof data?.code === 'string' ? data.code : `http_${res.status}`, typeof data?.error === 'string' ? data.error : `Request failed (${res.status})`, Array.isArray(data?.details) ? data.details : undefined);
  if (err.code === 'step_up_required' && !opts.retried && stepUpHandler) {
    if (await stepUpHandler()) return call<T>(method, path, body, { ...opts, retried: true });
  }
  if (err.status === 401 && err.code === 'unauthorized' && !opts.quiet401) unauthorizedHandler?.();
  throw err;
}

// Setup and authentication
export const setupStatus = () => call<{ open: boolean }>('GET', '/api/setup/status');
export const setupAdmin = (token: string, username: string, password: string) => call<{ user: User }>('POST', '/api/setup/admin', { token, username, password });
export const login = (username: string, password: string) => call<{ user?: User; totp_required?: boolean }>('POST', '/api/auth/login', { username, password });
export const loginTotp = (code: string) => call<{ user: User }>('POST', '/api/auth/totp', { code });
export const me = () => call<{ user: User; via: 'session' | 'token' }>('GET', '/api/auth/me', undefined, { quiet401: true });
export const logout = () => call<unknown>('POST', '/api/auth/logout');
export const totpSetup = () => call<{ secret: string; otpauth_url: string }>('POST', '/api/auth/totp/setup');
export const totpEnable = (code: string) => call<{ enabled: true; recovery_codes: string[] }>('POST', '/api/auth/totp/enable', { code });
export const stepUp = (cred: { password: string } | { code: string }) => call<{ verified_until: string }>('POST', '/api/auth/step-up', cred, { retried: true });

// Tokens
export const listTokens = () => call<Items<ApiToken>>('GET', '/api/auth/api-tokens');
export const createToken = (name: string, expiresAt: string | null) => call<NewApiToken>('POST', '/api/auth/api-tokens', { name, expires_at: expiresAt });
export const revokeToken = (id: string) => call<unknown>('DELETE', `/api/auth/api-tokens/${seg(id)}`);

// Apps
export const listApps = () => call<Items<App>>('GET', '/api/apps');
export const getApp = (id: string) => call<{ app: App }>('GET', `/api/apps/${seg(id)}`);
export const createApp = (name: string, source: AppSource) => call<{ app: App }>('POST', '/api/apps', { name, source });
export const deleteApp = (id: string) => call<unknown>('DELETE', `/api/apps/${seg(id)}`);
export const listServices = (id: string) => call<Items<Service>>('GET', `/api/apps/${seg(id)}/services`);
export const patchService = (id: string, name: string, patch: { port?: number | null; health_path?: string | null }) =>
  call<unknown>('PATCH', `/api/apps/${seg(id)}/services/${seg(name)}`, patch);
export const serviceAction = (id: string, name: string, action: 'start' | 'stop' | 'restart') => call<unknown>('POST', `/api/apps/${seg(id)}/services/${seg(name)}/${action}`);
export const getEnv = (id: string) => call<Items<EnvVar>>('GET', `/api/apps/${seg(id)}/env`);
export const putEnv = (id: string, items: Array<{ key: string; value: string | null; secret?: boolean }>) => call<Items<EnvVar>>('PUT', `/api/apps/${seg(id)}/env`, { items });
export const revealEnv = (id: string, key: string) => call<{ key: string; value: string }>('GET', `/api/apps/${seg(id)}/env/${seg(key)}/reveal`);

// Deployments
export const listDeployments = (id: string) => call<Items<Deployment>>('GET', `/api/apps/${seg(id)}/deployments`);
export const deploy = (id: string, ref?: string) => call<{ deployment: Deployment }>('POST', `/api/apps/${seg(id)}/deployments`, ref ? { ref } : {});
export const rollback = (id: string, did: string) => call<{ deployment: Deployment }>('POST', `/api/apps/${seg(id)}/deployments/${seg(did)}/rollback`);
export const cancelDeployment = (id: string, did: string) => call<{ deployment: Deployment }>('POST', `/api/apps/${seg(id)}/deployments/${seg(did)}/cancel`);
export const activeDeployments = () => call<Items<Deployment>>('GET', '/api/deployments/active');

// Audit and security
export const listAudit = (cursor?: string) => call<Items<AuditEntry>>('GET', `/api/audit${cursor ? `?cursor=${seg(cursor)}` : ''}`);
export const posture = () => call<Items<PostureItem>>('GET', '/api/security/posture');

// ---------------------------------------------------------------------------------------------
// App page (x16a): logs, stats, metrics, domains, databases, backups, webhook, triggers, deploy
// key, shell. Appended as one block on top of `call()` so the client swap underneath stays a
// separate change.
// ---------------------------------------------------------------------------------------------

export interface RuntimeLogLine extends LogLine {
  service: string;
  container: string;
}

export interface ServiceStats {
  service: string;
  container: string;
  cpu_percent: number;
  memory_bytes: number;
  memory_limit_bytes: number | null;
  rx_bytes: number;
  tx_bytes: number;
}

export type MetricsRange = '1h' | '6h' | '24h' | '7d' | '30d';
export interface MetricsPoint {
  t: number | string;
  requests: number;
  errors_4xx: number;
  errors_5xx: number;
  bytes_out: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}
export interface MetricsSeries {
  range: MetricsRange;
  step_seconds: number;
  points: MetricsPoint[];
}

export type DomainStatus = 'unassigned' | 'awaiting_dns' | 'issuing' | 'active' | 'error';
export interface Domain {
  id?: string;
  hostname: string;
  app_id: string | null;
  service: string | null;
  port: number | null;
  redirect_to?: string | null;
  status: DomainStatus;
  status_detail?: string | null;
  certificate?: { source: 'acme' | 'uploaded'; issuer: string | null; not_after: string | null } | null;
  dns?: { addresses: string[]; points_here: boolean; checked_at: string } | null;
  managed?: boolean;
}
export interface ProxySummary {
  synced?: boolean;
  error?: string;
  [k: string]: unknown;
}

export interface DbEngine {
  engine: 'postgres' | 'mariadb' | 'redis';
  versions: string[];
  default_version: string;
}
export interface Database {
  id: string;
  app_id: string;
  engine: string;
  version: string;
  name: string | null;
  username: string | null;
  host: string;
  port: number;
  env_var: string;
  status: 'provisioning' | 'ready' | 'error';
  error: string | null;
  size_bytes: number | null;
  created_at: string;
}

export type BackupSource = { type: 'database'; database_id: string } | { type: 'volume'; volume: string };
export interface BackupRun {
  id: string;
  backup_id: string;
  status: 'running' | 'succeeded' | 'failed' | 'interrupted';
  started_at: string;
  finished_at: string | null;
  size_bytes: number | null;
  sha256: string | null;
  error: string | null;
  verified_at?: string | null;
  verify_error?: string | null;
}
export interface BackupConfig {
  id: string;
  app_id: string;
  source: BackupSource;
  schedule: string;
  keep_last: number;
  destination: { type: 'local' } | { type: 's3'; bucket: string; [k: string]: unknown };
  enabled: boolean;
  verify_after_run?: boolean;
  last_run: BackupRun | null;
}
export interface Restore {
  id: string;
  run_id: string;
  status: 'running' | 'succeeded' | 'failed';
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface Webhook {
  url: string;
  secret_set: boolean;
  providers: string[];
}
export interface Trigger {
  id: string;
  event: 'push' | 'tag';
  pattern: string;
  enabled: boolean;
}
export interface DeployKey {
  public_key: string;
  fingerprint: string;
  created_at: string;
}

const one = <T>(r: any, key: string): T => (r && typeof r === 'object' && key in r ? r[key] : r) as T;

export const appMetrics = (id: string, range: MetricsRange, service?: string) =>
  call<MetricsSeries>('GET', `/api/apps/${seg(id)}/metrics?range=${seg(range)}${service ? `&service=${seg(service)}` : ''}`);

export const appDomains = (id: string) => call<{ items: Domain[]; proxy?: ProxySummary }>('GET', `/api/apps/${seg(id)}/domains`);
export const addAppDomain = (id: string, d: { hostname: string; service: string; port?: number }) =>
  call<{ domain: Domain; proxy?: ProxySummary }>('POST', `/api/apps/${seg(id)}/domains`, d);
export const refreshDomain = (did: string) => call<{ domain: Domain }>('POST', `/api/domains/${seg(did)}/refresh`);
export const deleteDomain = (did: string) => call<unknown>('DELETE', `/api/domains/${seg(did)}`);

export const dbEngines = () => call<Items<DbEngine>>('GET', '/api/databases/engines');
export const appDatabases = (id: string) => call<Items<Database>>('GET', `/api/apps/${seg(id)}/databases`);
export const createDatabase = (id: string, d: { engine: string; version?: string; env_var?: string }) =>
  call<unknown>('POST', `/api/apps/${seg(id)}/databases`, d).then((r) => one<Database>(r, 'database'));
export const deleteDatabase = (id: string, dbid: string, keepData: boolean) =>
  call<unknown>('DELETE', `/api/apps/${seg(id)}/databases/${seg(dbid)}${keepData ? '?keep_data=true' : ''}`);

export const appBackups = (id: string) => call<Items<BackupConfig>>('GET', `/api/apps/${seg(id)}/backups`);
export const createBackup = (id: string, b: { source: BackupSource; schedule: string; keep_last: number; destination: { type: 'local' } }) =>
  call<unknown>('POST', `/api/apps/${seg(id)}/backups`, b).then((r) => one<BackupConfig>(r, 'backup'));
export const deleteBackup = (id: string, bid: string) => call<unknown>('DELETE', `/api/apps/${seg(id)}/backups/${seg(bid)}`);
export const runBackup = (id: string, bid: string) => call<{ run: BackupRun }>('POST', `/api/apps/${seg(id)}/backups/${seg(bid)}/run`);
export const backupRuns = (id: string, bid: string) => call<Items<BackupRun>>('GET', `/api/apps/${seg(id)}/backups/${seg(bid)}/runs`);
export const restoreRun = (id: string, rid: string) => call<{ restore: Restore }>('POST', `/api/apps/${seg(id)}/backups/runs/${seg(rid)}/restore`);
export const getRestore = (id: string, xid: string) => call<{ restore: Restore }>('GET', `/api/apps/${seg(id)}/backups/restores/${seg(xid)}`);
/** A plain link: the browser downloads it with the session cookie (a GET needs no CSRF token). */
export const backupDownloadUrl = (id: string, rid: string) => `/api/apps/${seg(id)}/backups/runs/${seg(rid)}/download`;

export const getWebhook = (id: string) => call<Webhook>('GET', `/api/apps/${seg(id)}/webhook`);
export const regenerateWebhook = (id: string) => call<{ secret: string }>('POST', `/api/apps/${seg(id)}/webhook/regenerate`);
export const listTriggers = (id: string) => call<Items<Trigger>>('GET', `/api/apps/${seg(id)}/triggers`);
export const addTrigger = (id: string, t: { event: 'push' | 'tag'; pattern: string; enabled?: boolean }) => call<unknown>('POST', `/api/apps/${seg(id)}/triggers`, t);
export const deleteTrigger = (id: string, tid: string) => call<unknown>('DELETE', `/api/apps/${seg(id)}/triggers/${seg(tid)}`);
export const getDeployKey = (id: string) => call<DeployKey>('GET', `/api/apps/${seg(id)}/ssh-key`);
export const regenerateDeployKey = (id: string) => call<unknown>('POST', `/api/apps/${seg(id)}/ssh-key/regenerate`);
export const testDeployKey = (id: string) => call<{ ok: boolean; message: string }>('POST', `/api/apps/${seg(id)}/ssh-key/test-connection`);

export const instanceInfo = () => call<{ features?: { shell?: boolean } }>('GET', '/api/instance/info');
/** The shell's WebSocket needs a recent step-up, which a browser upgrade cannot ask for: ask first. */
export const confirmIdentity = (): Promise<boolean> => (stepUpHandler ? stepUpHandler() : Promise.resolve(false));
export const shellUrl = (id: string, service: string) =>
  `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/apps/${seg(id)}/services/${seg(service)}/shell`;
