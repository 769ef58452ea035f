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

/** CONTRACT.md "Audit diff and revert": the contract's fields, then a few extra facts. */
export interface AuditEntry {
  id: string;
  at: string;
  actor: { type: 'user' | 'token' | 'system'; id: string | null; name: string | null };
  /** `<METHOD> <route pattern>`: `PUT /api/apps/{id}/env`. */
  action: string;
  target: { type: string; id: string | null };
  ip: string | null;
  outcome: 'ok' | 'error';
  summary: string;
  revertible: boolean;
  reverted_at: string | null;
  event: string | null;
  status: number;
  user: { id: string; username: string } | null;
  via: string | null;
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

// Audit: filters, diff and revert (CONTRACT.md "Audit diff and revert")
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
export interface AuditDiffRow {
  field: string;
  status: 'added' | 'removed' | 'changed' | 'unchanged';
  before?: unknown;
  after?: unknown;
  masked: boolean;
}
export const queryAudit = (filter: AuditFilter, cursor?: string, limit = 100) => {
  const q = new URLSearchParams({ limit: String(limit) });
  for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
  if (cursor) q.set('cursor', cursor);
  return call<Items<AuditRow>>('GET', `/api/audit?${q}`);
};
export const auditDiff = (id: string) => call<{ rows: AuditDiffRow[]; changed_since: boolean }>('GET', `/api/audit/${seg(id)}/diff`);
export const revertAudit = (id: string, force = false) => call<{ audit_id: string }>('POST', `/api/audit/${seg(id)}/revert`, force ? { force: true } : {});
