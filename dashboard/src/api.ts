// Every call the dashboard makes to the control plane goes through this module, over the client
// generated from the OpenAPI document (client/): paths, bodies and answers are typed by the
// document, so a renamed field fails the dashboard's type check instead of a page at run time.
// Cookie session + X-CSRF-Token on writes (docs/api.md "Authentication in a few lines"); a `step_up_required` answer asks the
// registered step-up handler and retries the call once; any other error body becomes an ApiError.
import createFetchClient from 'openapi-fetch';
import type { components, paths } from '../../client/types';

type S = components['schemas'];
export type User = S['User'];
export type App = S['App'];
export type AppStatus = App['status'];
export type AppSource = S['AppSource'];
export type BuildSetting = S['BuildSetting'];
export type BuildLimits = S['BuildLimits'];
export type BuildPlan = S['BuildPlan'];
export type Service = S['Service'];
export type EnvVar = S['EnvItem'];
// The active-deployments listing adds the app's name.
export type Deployment = S['Deployment'] & { app?: string };
export type DeploymentStatus = Deployment['status'];
export const TERMINAL: readonly DeploymentStatus[] = ['succeeded', 'failed', 'canceled', 'interrupted'];
export type ApiToken = S['ApiToken'];
export type NewApiToken = S['NewApiToken'];
export type AuditEntry = S['AuditEntry'];
export type PostureItem = S['PostureItem'];
export type Domain = S['Domain'];
export type Preview = S['Preview'];
export type PreviewSettings = S['PreviewSettings'];
export type AutomaticHost = S['AutomaticHost'];
export type NotificationChannel = S['NotificationChannel'];
export type NotificationDelivery = S['NotificationDelivery'];
export type Session = S['Session'];
export type TrafficSnapshot = S['TrafficSnapshot'];
export type Operator = S['Operator'];
export type Role = Operator['role'];
export type Invitation = S['Invitation'];
export type CreatedInvitation = S['CreatedInvitation'];
export type ClusterNode = S['Node'];
export type NodeJoinCommand = S['NodeJoinCommand'];

/** A build log line as the `build:<id>` topic and `GET .../logs` carry it. */
export type LogLine = S['LogLine'];

export interface Items<T> {
  items: T[];
  next_cursor?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    // `looked_for`: the files a not_detectable answer searched for.
    readonly details?: Array<{ field?: string; message?: string; looked_for?: string[] }>,
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

export const client = createFetchClient<paths>({
  baseUrl: '',
  credentials: 'same-origin',
  headers: { accept: 'application/json' },
});
client.use({
  onRequest({ request }) {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const csrf = csrfToken();
      if (csrf) request.headers.set('x-csrf-token', csrf);
    }
    return request;
  },
});

export interface CallOptions {
  retried?: boolean;
  quiet401?: boolean;
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function toApiError(status: number, body: unknown): ApiError {
  const b = (body && typeof body === 'object' ? body : {}) as {
    error?: unknown;
    code?: unknown;
    details?: unknown;
  };
  return new ApiError(
    status,
    typeof b.code === 'string' ? b.code : `http_${status}`,
    typeof b.error === 'string' ? b.error : `Request failed (${status})`,
    Array.isArray(b.details) ? (b.details as ApiError['details']) : undefined,
  );
}

/**
 * Runs one request (again, after a step-up) and answers its data or throws an ApiError. `send`
 * is a typed client call, so T is the document's answer for that path and method.
 */
export async function run<T>(send: () => Promise<Answer<T>>, opts: CallOptions = {}): Promise<T> {
  let r: Answer<T>;
  try {
    r = await send();
  } catch {
    throw new ApiError(0, 'network_error', 'The control plane cannot be reached');
  }
  if (r.response.ok) return r.data as T;
  const err = toApiError(r.response.status, r.error);
  if (err.code === 'step_up_required' && !opts.retried && stepUpHandler) {
    if (await stepUpHandler()) return run(send, { ...opts, retried: true });
  }
  if (err.status === 401 && err.code === 'unauthorized' && !opts.quiet401) unauthorizedHandler?.();
  throw err;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Lower<M extends Method> = Lowercase<M>;
type Op<P, M extends Method> = P extends keyof paths
  ? Lower<M> extends keyof paths[P]
    ? paths[P][Lower<M>]
    : never
  : never;
type Ok<O> = O extends { responses: infer R }
  ? R[Extract<keyof R, 200 | 201 | 202>] extends { content: { 'application/json': infer J } }
    ? J
    : unknown
  : unknown;

/**
 * A request by method and concrete path (ids already in it, query string included). With a
 * template path of the document (`/api/apps/{id}`) T defaults to its answer; otherwise name T.
 */
export function call<T = never, M extends Method = Method, P extends string = string>(
  method: M,
  path: P,
  body?: unknown,
  opts: CallOptions = {},
): Promise<[T] extends [never] ? Ok<Op<P, M>> : T> {
  const init = body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } };
  // The path is concrete here, so it goes through the untyped request: the document's template
  // paths are what the typed helpers below use.
  const request = client.request as unknown as (m: string, p: string, i: object) => Promise<Answer<any>>;
  return run(() => request(method.toLowerCase(), path, init), opts);
}

// Setup and authentication
export const setupStatus = () => run(() => client.GET('/api/setup/status'));
export const setupAdmin = (token: string, username: string, password: string) =>
  run(() => client.POST('/api/setup/admin', { body: { token, username, password } }));
export const login = (username: string, password: string) =>
  run(() => client.POST('/api/auth/login', { body: { username, password } })) as Promise<{
    user?: User;
    totp_required?: boolean;
  }>;
export const loginTotp = (code: string) =>
  run(() => client.POST('/api/auth/totp', { body: { code } })) as Promise<{ user: User }>;
export const me = () => run(() => client.GET('/api/auth/me'), { quiet401: true });
export const logout = () => run(() => client.POST('/api/auth/logout'));
export const totpSetup = () => run(() => client.POST('/api/auth/totp/setup'));
export const totpEnable = (code: string) =>
  run(() => client.POST('/api/auth/totp/enable', { body: { code } }));
/** Where the browser goes to sign in at the OpenID Connect provider (or, with stepUp, to confirm it is them there). */
export const oidcStartUrl = (opts: { stepUp?: boolean; returnTo?: string } = {}) => {
  const q = new URLSearchParams();
  if (opts.stepUp) q.set('step_up', '1');
  if (opts.returnTo && opts.returnTo !== '/') q.set('return_to', opts.returnTo);
  const s = q.toString();
  return '/api/auth/oidc/start' + (s ? '?' + s : '');
};
export const stepUp = (cred: { password: string } | { code: string }) =>
  run(() => client.POST('/api/auth/step-up', { body: cred }), { retried: true });
export const changePassword = (current: string, next: string) =>
  run(() => client.POST('/api/auth/password', { body: { current_password: current, new_password: next } }));
export const listSessions = () => run(() => client.GET('/api/auth/sessions'));
export const revokeSession = (id: string) =>
  run(() => client.DELETE('/api/auth/sessions/{id}', { params: { path: { id } } }));

// Tokens
export const listTokens = () => run(() => client.GET('/api/auth/api-tokens'));
/** Null scopes or apps: the token follows its owner's permissions and apps. */
export const createToken = (
  name: string,
  expiresAt: string | null,
  scopes: ApiToken['scopes'],
  appIds: string[] | null,
) =>
  run(() =>
    client.POST('/api/auth/api-tokens', { body: { name, expires_at: expiresAt, scopes, app_ids: appIds } }),
  ) as Promise<NewApiToken>;
export const revokeToken = (id: string) =>
  run(() => client.DELETE('/api/auth/api-tokens/{id}', { params: { path: { id } } }));

// Operators and invitations
const op = (id: string) => ({ params: { path: { id } } });
export const listOperators = () => run(() => client.GET('/api/operators'));
export const patchOperator = (
  id: string,
  patch: { role?: Role; app_ids?: string[] | null; disabled?: boolean },
) => run(() => client.PATCH('/api/operators/{id}', { ...op(id), body: patch }));
export const deleteOperator = (id: string) => run(() => client.DELETE('/api/operators/{id}', op(id)));
export const resetLink = (id: string) =>
  run(() => client.POST('/api/operators/{id}/reset', { ...op(id), body: {} }));
export const listInvitations = () => run(() => client.GET('/api/operators/invitations'));
export const invite = (body: { role: Role; app_ids?: string[] | null; expires_in_hours?: number }) =>
  run(() => client.POST('/api/operators/invitations', { body }));
export const revokeInvitation = (id: string) =>
  run(() => client.DELETE('/api/operators/invitations/{id}', op(id)));
export const openInvitation = (token: string) =>
  run(() => client.GET('/api/invitations/{token}', { params: { path: { token } } }), { quiet401: true });
export const acceptInvitation = (token: string, body: { username?: string; password: string }) =>
  run(() => client.POST('/api/invitations/{token}/accept', { params: { path: { token } }, body }), {
    quiet401: true,
  });

// Apps
const app = (id: string) => ({ params: { path: { id } } });
/** One page of apps by name (`?cursor=&limit=&q=`), with their URLs, newest deployment and the proxy state. */
export const listApps = (query: { cursor?: string; limit?: number; q?: string } = {}) =>
  run(() => client.GET('/api/apps', { params: { query } }));
export const getApp = (id: string) => run(() => client.GET('/api/apps/{id}', app(id)));
export const createApp = (name: string, source: AppSource) =>
  run(() => client.POST('/api/apps', { body: { name, source } }));
export const patchApp = (
  id: string,
  body: { source?: AppSource; build_limits?: BuildLimits | null; sleep_after_minutes?: number | null },
) => run(() => client.PATCH('/api/apps/{id}', { ...app(id), body }));
/** What a deploy of `ref` (default: the app's branch) would build from source, with the saved settings. */
export const buildPlan = (id: string, ref?: string) =>
  run(() => client.GET('/api/apps/{id}/build-plan', { params: { path: { id }, query: ref ? { ref } : {} } }));
export const deleteApp = (id: string) => run(() => client.DELETE('/api/apps/{id}', app(id)));
// Previews (docs/previews.md): reached through their app, never by their own app row.
const pv = (id: string, pid: string) => ({ params: { path: { id, pid } } });
export const listPreviews = (id: string) => run(() => client.GET('/api/apps/{id}/previews', app(id)));
export const createPreview = (id: string, body: { branch: string; number?: number }) =>
  run(() => client.POST('/api/apps/{id}/previews', { ...app(id), body }));
export const deletePreview = (id: string, pid: string) =>
  run(() => client.DELETE('/api/apps/{id}/previews/{pid}', pv(id, pid)));
export const previewSettings = (id: string) =>
  run(() => client.GET('/api/apps/{id}/previews/settings', app(id)));
export const putPreviewSettings = (id: string, body: PreviewSettings) =>
  run(() => client.PUT('/api/apps/{id}/previews/settings', { ...app(id), body }));
export const listServices = (id: string) => run(() => client.GET('/api/apps/{id}/services', app(id)));
export const patchService = (
  id: string,
  name: string,
  patch: { port?: number | null; health_path?: string | null },
) =>
  run(() => client.PATCH('/api/apps/{id}/services/{name}', { params: { path: { id, name } }, body: patch }));
export const serviceAction = (id: string, name: string, action: 'start' | 'stop' | 'restart') =>
  run(() => client.POST(`/api/apps/{id}/services/{name}/${action}`, { params: { path: { id, name } } }));
/** run(), keeping the answer's ETag (of the last attempt, when a step-up made it retry). */
async function tagged<T>(send: () => Promise<Answer<T>>): Promise<{ data: T; etag: string | null }> {
  let etag: string | null = null;
  const data = await run(async () => {
    const r = await send();
    etag = r.response.headers.get('etag');
    return r;
  });
  return { data, etag };
}
// Writes to the variables carry the ETag they were based on: a change made by someone else in
// between answers 412 precondition_failed instead of being silently overwritten.
const ifMatch = (etag: string | null) => (etag ? { headers: { 'if-match': etag } } : {});
export const getEnv = (id: string) => tagged(() => client.GET('/api/apps/{id}/env', app(id)));
export const putEnv = (
  id: string,
  items: Array<{ key: string; value: string | null; secret?: boolean }>,
  etag: string | null,
) => tagged(() => client.PUT('/api/apps/{id}/env', { ...app(id), body: { items }, ...ifMatch(etag) }));
export const setEnvVar = (id: string, key: string, value: string, secret: boolean, etag: string | null) =>
  tagged(() =>
    client.PUT('/api/apps/{id}/env/{key}', {
      params: { path: { id, key } },
      body: { value, secret },
      ...ifMatch(etag),
    }),
  );
export const removeEnvVar = (id: string, key: string, etag: string | null) =>
  tagged(() =>
    client.DELETE('/api/apps/{id}/env/{key}', { params: { path: { id, key } }, ...ifMatch(etag) }),
  );
export const revealEnv = (id: string, key: string) =>
  run(() => client.GET('/api/apps/{id}/env/{key}/reveal', { params: { path: { id, key } } }));

// Deployments
export const listDeployments = (id: string) => run(() => client.GET('/api/apps/{id}/deployments', app(id)));
export const deploy = (id: string, ref?: string) =>
  run(() => client.POST('/api/apps/{id}/deployments', { ...app(id), body: ref ? { ref } : {} }));
export const rollback = (id: string, did: string) =>
  run(() => client.POST('/api/apps/{id}/deployments/{did}/rollback', { params: { path: { id, did } } }));
export const cancelDeployment = (id: string, did: string) =>
  run(() => client.POST('/api/apps/{id}/deployments/{did}/cancel', { params: { path: { id, did } } }));
export const activeDeployments = () =>
  run(() => client.GET('/api/deployments/active')) as Promise<Items<Deployment>>;

// Audit and security
export const listAudit = (cursor?: string) =>
  run(() => client.GET('/api/audit', { params: { query: cursor ? { cursor } : {} } }));
export const posture = () => run(() => client.GET('/api/security/posture'));
export const traffic = () => run(() => client.GET('/api/security/traffic'));
export const firewall = () => run(() => client.GET('/api/security/firewall'));
export const fail2ban = () => run(() => client.GET('/api/security/fail2ban'));

// Domains and host
export const listDomains = () => run(() => client.GET('/api/domains'));
export const refreshDomain = (id: string) =>
  run(() => client.POST('/api/domains/{id}/refresh', { params: { path: { id } } }));
export const hostMetrics = (range: '1h' | '6h' | '24h' | '7d' | '30d' = '1h') =>
  call<HostMetrics>('GET', `/api/host/metrics?range=${range}`);

// Notifications
export const listChannels = () => run(() => client.GET('/api/settings/notifications'));
export const createChannel = (body: components['schemas']['PostApiSettingsNotificationsBody']) =>
  run(() => client.POST('/api/settings/notifications', { body }));
export const patchChannel = (
  id: string,
  body: components['schemas']['PatchApiSettingsNotificationsByIdBody'],
) => run(() => client.PATCH('/api/settings/notifications/{id}', { params: { path: { id } }, body }));
export const deleteChannel = (id: string) =>
  run(() => client.DELETE('/api/settings/notifications/{id}', { params: { path: { id } } }));
export const testChannel = (id: string) =>
  run(() => client.POST('/api/settings/notifications/{id}/test', { params: { path: { id } } }));
export const channelDeliveries = (id: string) =>
  run(() => client.GET('/api/settings/notifications/{id}/deliveries', { params: { path: { id } } }));

// Instance
export const instanceInfo = () => call<InstanceInfo>('GET', '/api/instance/info');
export const getBaseDomain = () =>
  call<{ base_domain: string | null; control_domain?: string | null }>('GET', '/api/instance/base-domain');
export const putBaseDomain = (base: string | null) =>
  call<{ base_domain: string | null }>('PUT', '/api/instance/base-domain', { base_domain: base });
export const dnsCheck = (host: string) =>
  call<DnsCheck>('GET', `/api/instance/dns-check?host=${encodeURIComponent(host)}`);
export const getConcurrency = () => run(() => client.GET('/api/instance/deploy-concurrency'));
export const putConcurrency = (concurrency: number) =>
  run(() => client.PUT('/api/instance/deploy-concurrency', { body: { concurrency } }));
export const diskUsage = () => call<DiskUsage>('GET', '/api/instance/disk');

// Nodes (cluster mode)
export const listNodes = () => run(() => client.GET('/api/nodes'));
export const patchNode = (id: string, body: { availability?: ClusterNode['availability'] }) =>
  run(() => client.PATCH('/api/nodes/{id}', { params: { path: { id } }, body }));
export const joinCommand = () => run(() => client.POST('/api/nodes/join'));
export const prune = () =>
  call<{ reclaimed_bytes: number } & Record<string, number>>('POST', '/api/instance/prune');
export const restartInstance = () => call<{ restarting: true }>('POST', '/api/instance/restart');
export const resetInstance = () =>
  call<{ removed: Array<{ name: string }>; failed: Array<{ name: string; error?: string }> }>(
    'POST',
    '/api/instance/reset',
    { confirm: 'RESET' },
  );

// Answers typed by the document's schemas.
export type InstanceInfo = S['InstanceInfo'];
export type DnsCheck = S['DnsCheck'];
export type DiskUsage = S['DiskUsage'];
export type HostVital = HostMetrics['vitals'][number];
export type HostMetrics = S['HostMetrics'];

// Audit: filters, diff and revert (docs/api.md "Audit diff and revert")
export interface AuditEntryState {
  state_kind: string | null;
  reverted_by: string | null;
  revert_of: string | null;
}
export type AuditRow = AuditEntry & AuditEntryState;
export interface AuditFilter {
  actor?: string;
  action?: string;
  target?: string;
  since?: string;
  until?: string;
}
export type AuditDiffRow = S['AuditDiff']['rows'][number];
export const queryAudit = (filter: AuditFilter, cursor?: string, limit = 100) => {
  const q = new URLSearchParams({ limit: String(limit) });
  for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
  if (cursor) q.set('cursor', cursor);
  return call<Items<AuditRow>>('GET', `/api/audit?${q}`);
};
const seg = encodeURIComponent;
export const auditDiff = (id: string) =>
  call<{ rows: AuditDiffRow[]; changed_since: boolean }>('GET', `/api/audit/${seg(id)}/diff`);
export const revertAudit = (id: string, force = false) =>
  call<{ audit_id: string }>('POST', `/api/audit/${seg(id)}/revert`, force ? { force: true } : {});

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
export type MetricsPoint = MetricsSeries['points'][number];
export type MetricsSeries = S['MetricsSeries'];

export type DomainStatus = Domain['status'];
export type ProxySummary = S['ProxySummary'];

export type DbEngine = S['DatabaseEngine'];
export type Database = S['Database'];

export type BackupSource = BackupConfig['source'];
export type BackupRun = S['BackupRun'];
export type BackupConfig = S['BackupConfig'];
export type Restore = S['Restore'];

export interface Webhook {
  url: string;
  secret_set: boolean;
  providers: string[];
}
export type Trigger = S['Trigger'];
export type DeployKey = S['DeployKey'];

const one = <T>(r: any, key: string): T => (r && typeof r === 'object' && key in r ? r[key] : r) as T;

export const appMetrics = (id: string, range: MetricsRange, service?: string) =>
  call<MetricsSeries>(
    'GET',
    `/api/apps/${seg(id)}/metrics?range=${seg(range)}${service ? `&service=${seg(service)}` : ''}`,
  );

export const appDomains = (id: string) =>
  call<{ items: Domain[]; proxy?: ProxySummary }>('GET', `/api/apps/${seg(id)}/domains`);
export const addAppDomain = (id: string, d: { hostname: string; service: string; port?: number }) =>
  call<{ domain: Domain; proxy?: ProxySummary }>('POST', `/api/apps/${seg(id)}/domains`, d);
export const deleteDomain = (did: string) => call<unknown>('DELETE', `/api/domains/${seg(did)}`);

export const dbEngines = () => call<Items<DbEngine>>('GET', '/api/databases/engines');
export const appDatabases = (id: string) => call<Items<Database>>('GET', `/api/apps/${seg(id)}/databases`);
export const createDatabase = (id: string, d: { engine: string; version?: string; env_var?: string }) =>
  call<unknown>('POST', `/api/apps/${seg(id)}/databases`, d).then((r) => one<Database>(r, 'database'));
export const deleteDatabase = (id: string, dbid: string, keepData: boolean) =>
  call<unknown>('DELETE', `/api/apps/${seg(id)}/databases/${seg(dbid)}${keepData ? '?keep_data=true' : ''}`);

export const appBackups = (id: string) => call<Items<BackupConfig>>('GET', `/api/apps/${seg(id)}/backups`);
export const createBackup = (
  id: string,
  b: { source: BackupSource; schedule: string; keep_last: number; destination: { type: 'local' } },
) => call<unknown>('POST', `/api/apps/${seg(id)}/backups`, b).then((r) => one<BackupConfig>(r, 'backup'));
export const deleteBackup = (id: string, bid: string) =>
  call<unknown>('DELETE', `/api/apps/${seg(id)}/backups/${seg(bid)}`);
export const runBackup = (id: string, bid: string) =>
  call<{ run: BackupRun }>('POST', `/api/apps/${seg(id)}/backups/${seg(bid)}/run`);
export const backupRuns = (id: string, bid: string) =>
  call<Items<BackupRun>>('GET', `/api/apps/${seg(id)}/backups/${seg(bid)}/runs`);
export const restoreRun = (id: string, rid: string) =>
  call<{ restore: Restore }>('POST', `/api/apps/${seg(id)}/backups/runs/${seg(rid)}/restore`);
export const getRestore = (id: string, xid: string) =>
  call<{ restore: Restore }>('GET', `/api/apps/${seg(id)}/backups/restores/${seg(xid)}`);
/** A plain link: the browser downloads it with the session cookie (a GET needs no CSRF token). */
export const backupDownloadUrl = (id: string, rid: string) =>
  `/api/apps/${seg(id)}/backups/runs/${seg(rid)}/download`;

export const getWebhook = (id: string) => call<Webhook>('GET', `/api/apps/${seg(id)}/webhook`);
export const regenerateWebhook = (id: string) =>
  call<{ secret: string }>('POST', `/api/apps/${seg(id)}/webhook/regenerate`);
export const listTriggers = (id: string) => call<Items<Trigger>>('GET', `/api/apps/${seg(id)}/triggers`);
export const addTrigger = (id: string, t: { event: Trigger['event']; pattern: string; enabled?: boolean }) =>
  call<unknown>('POST', `/api/apps/${seg(id)}/triggers`, t);
export const deleteTrigger = (id: string, tid: string) =>
  call<unknown>('DELETE', `/api/apps/${seg(id)}/triggers/${seg(tid)}`);
export const getDeployKey = (id: string) => call<DeployKey>('GET', `/api/apps/${seg(id)}/ssh-key`);
export const regenerateDeployKey = (id: string) =>
  call<unknown>('POST', `/api/apps/${seg(id)}/ssh-key/regenerate`);
export const testDeployKey = (id: string) =>
  call<{ ok: boolean; message: string }>('POST', `/api/apps/${seg(id)}/ssh-key/test-connection`);

/** The shell's WebSocket needs a recent step-up, which a browser upgrade cannot ask for: ask first. */
export const confirmIdentity = (): Promise<boolean> =>
  stepUpHandler ? stepUpHandler() : Promise.resolve(false);
export const shellUrl = (id: string, service: string) =>
  `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/apps/${seg(id)}/services/${seg(service)}/shell`;

// ---------------------------------------------------------------------------------------------
// Everyday use: the apps list a page at a time, an app's start and stop, add-on templates, export
// and import, certificates, webhook deliveries, recovery codes, the instance backup.
// ---------------------------------------------------------------------------------------------

export type AppListItem = S['AppListItem'];
export type AppsPage = Awaited<ReturnType<typeof listApps>>;
export type Addon = S['Addon'];
export type AppSpec = S['AppFile'];
export type WebhookDelivery = S['WebhookDelivery'];
export type InstanceBackup = S['InstanceBackup'];
export type InstanceBackupRun = S['InstanceBackupRun'];
export type BackupDestination = BackupConfig['destination'];
/** A destination as a form sends it: S3's secret key only when (re)typed. */
export type DestinationInput =
  | { type: 'local' }
  | (Omit<Extract<BackupDestination, { type: 's3' }>, 'secret_set'> & { secret_access_key?: string });

/** Every app the caller may see (for pickers): the pages followed to the end. */
export async function allApps(): Promise<AppListItem[]> {
  const out: AppListItem[] = [];
  let cursor: string | undefined;
  do {
    const r = await listApps({ limit: 500, ...(cursor ? { cursor } : {}) });
    out.push(...r.items);
    cursor = r.next_cursor;
  } while (cursor);
  return out;
}

export const appAction = (id: string, action: 'start' | 'stop' | 'restart') =>
  run(() => client.POST(`/api/apps/{id}/${action}`, app(id)));
export const exportApp = (id: string) => run(() => client.GET('/api/apps/{id}/export', app(id)));
export const importApp = (spec: unknown) => call<{ app: App }>('POST', '/api/apps/import', spec);

export const listAddons = () => run(() => client.GET('/api/addons'));
export const installAddon = (id: string, name: string, params: Record<string, string>) =>
  run(() => client.POST('/api/addons/{id}/install', { params: { path: { id } }, body: { name, params } }));

export const uploadCertificate = (id: string, certPem: string, keyPem: string) =>
  run(() =>
    client.POST('/api/domains/{id}/certificate', {
      params: { path: { id } },
      body: { cert_pem: certPem, key_pem: keyPem },
    }),
  );
export const removeCertificate = (id: string) =>
  run(() => client.DELETE('/api/domains/{id}/certificate', { params: { path: { id } } }));

export const webhookDeliveries = (id: string) =>
  run(() => client.GET('/api/apps/{id}/webhook/deliveries', app(id)));

export const regenerateRecoveryCodes = () => run(() => client.POST('/api/auth/recovery-codes'));
export const disableTotp = () => run(() => client.DELETE('/api/auth/totp'));

export const backupsOverview = () => run(() => client.GET('/api/backups'));
export const createBackupTo = (
  id: string,
  b: { source: BackupSource; schedule: string; keep_last: number; destination: DestinationInput },
) => call<unknown>('POST', `/api/apps/${seg(id)}/backups`, b).then((r) => one<BackupConfig>(r, 'backup'));

export const instanceBackup = () => run(() => client.GET('/api/instance/backup')).then((r) => r.backup);
export const putInstanceBackup = (body: {
  schedule?: string;
  keep_last?: number;
  destination?: DestinationInput;
  enabled?: boolean;
}) => call<{ backup: InstanceBackup }>('PUT', '/api/instance/backup', body).then((r) => r.backup);
export const runInstanceBackup = () => run(() => client.POST('/api/instance/backup/run'));
export const instanceBackupRuns = () => run(() => client.GET('/api/instance/backup/runs'));
/** What the last `svc restore-instance` brought back; null when none ran (404). */
export const instanceRecovery = () =>
  run(() => client.GET('/api/instance/recovery')).catch((e: unknown) => {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  });

// ---------------------------------------------------------------------------------------------
// Jobs, runs, one-off commands and the release command (docs/jobs.md).
// ---------------------------------------------------------------------------------------------
export type Job = S['Job'];
export type Run = S['Run'];
export type RunLogLine = S['RunLogLine'];
export type JobFields = S['PostApiAppsByIdJobsBody'];
const jobPath = (id: string, jid: string) => ({ params: { path: { id, jid } } });
export const listJobs = (id: string) => run(() => client.GET('/api/apps/{id}/jobs', app(id)));
export const createJob = (id: string, body: JobFields) =>
  run(() => client.POST('/api/apps/{id}/jobs', { ...app(id), body }));
export const patchJob = (id: string, jid: string, body: Partial<JobFields>) =>
  run(() => client.PATCH('/api/apps/{id}/jobs/{jid}', { ...jobPath(id, jid), body }));
export const deleteJob = (id: string, jid: string) =>
  run(() => client.DELETE('/api/apps/{id}/jobs/{jid}', jobPath(id, jid)));
export const runJob = (id: string, jid: string) =>
  run(() => client.POST('/api/apps/{id}/jobs/{jid}/run', jobPath(id, jid)));
export const jobRuns = (id: string, jid: string) =>
  run(() => client.GET('/api/apps/{id}/jobs/{jid}/runs', jobPath(id, jid)));
export const appRuns = (id: string) => run(() => client.GET('/api/apps/{id}/runs', app(id)));
export const runCommand = (
  id: string,
  body: { command: string[]; service?: string | null; timeout_s?: number },
) => run(() => client.POST('/api/apps/{id}/runs', { ...app(id), body }));
export const cancelRun = (id: string, rid: string) =>
  run(() => client.POST('/api/apps/{id}/runs/{rid}/cancel', { params: { path: { id, rid } } }));
export const setRelease = (
  id: string,
  body: { release_command: string[] | null; release_timeout_s?: number | null },
) => run(() => client.PATCH('/api/apps/{id}', { ...app(id), body }));
