// Starts the real server on port 0 with its own data directory, and a small client that keeps
// cookies like a browser does (and echoes the CSRF cookie when asked). The same client talks to an
// in-process app (tests/_support/request.ts) when given its url.
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '#lib/config.js';
import { createEnv, announceSetup } from '../../runtime/boot.js';
import { startServer, type Running } from '../../runtime/server.js';
import { startBackground } from '../../runtime/background.js';
import type { Services } from '#lib/http/handler.js';
import { pino } from 'pino';
import { createLogger, type Logger } from '#lib/log.js';
import { DeployService, type DeployServiceOptions } from '#lib/deploy/service.js';
import type { EdgeOptions } from '#lib/proxy/edge.js';
import type { SleeperOptions } from '#lib/sleep/index.js';
import { testFetch } from './transport.js';
import { testDatabaseVars } from './postgres.js';

export const TEST_MASTER_KEY = 'a'.repeat(64);
export const ADMIN = { username: 'admin', password: 'correct horse battery staple' };

export interface TestServer {
  env: Services;
  running: Running;
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** `deploy`: options of the deployment service (a short reaper interval...), set before it starts. */
export async function startTestServer(
  vars: Record<string, string> = {},
  opts: {
    log?: Logger;
    deploy?: Partial<DeployServiceOptions>;
    edge?: EdgeOptions;
    sleep?: SleeperOptions;
  } = {},
): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-test-'));
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_PASSWORD_COST: '14',
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_LOG_LEVEL: 'silent',
    SVC_ACCESS_LOG: join(dataDir, 'access.log'),
    SVC_SECURITY_DIR: join(dataDir, 'security'),
    // No test server talks to a Caddy unless it brings its own (tests/_support/edge.ts).
    SVC_PROXY: 'off',
    SVC_PROXY_RESOLVER_PORT: '0',
    ...(await testDatabaseVars()),
    ...vars,
  });
  const env = await createEnv(config, {
    log: opts.log ?? createLogger(config.logLevel),
    edge: opts.edge,
    sleep: opts.sleep,
  });
  if (opts.deploy) env.deployments = new DeployService(env, opts.deploy);
  await announceSetup(env);
  const running = await startServer(env);
  startBackground(env, running);
  return {
    env,
    running,
    url: running.url,
    dataDir,
    async stop() {
      await running.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function setupToken(s: Pick<TestServer, 'dataDir'>): Promise<string> {
  return (await readFile(join(s.dataDir, 'setup.token'), 'utf8')).trim();
}

export class Client {
  cookies = new Map<string, string>();
  bearer: string | null = null;
  constructor(
    readonly base: string,
    readonly headers: Record<string, string> = {},
  ) {}

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async req(
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<{ status: number; headers: Headers; body: any; text: string }> {
    const headers: Record<string, string> = { ...this.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.cookies.size) headers.cookie = this.cookieHeader();
    const csrf = this.cookies.get('svc_csrf');
    if (csrf && method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrf;
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    Object.assign(headers, extra);
    for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
    const res = await testFetch(this.base + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    let parsed: any = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }
}

/** Runs setup and logs in; returns a client holding the session cookies. */
export async function adminClient(s: Pick<TestServer, 'url' | 'dataDir'>): Promise<Client> {
  const c = new Client(s.url);
  const token = await setupToken(s).catch(() => null);
  if (token) {
    const r = await c.req('POST', '/api/setup/admin', { token, ...ADMIN });
    if (r.status !== 201) throw new Error(`setup failed: ${r.status} ${r.text}`);
  }
  const r = await c.req('POST', '/api/auth/login', ADMIN);
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
  return c;
}

/** Creates an API token the way an operator must: a step-up first (tokens need a recent one). */
export async function apiToken(c: Client, name: string): Promise<string> {
  const up = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  if (up.status !== 200) throw new Error(`step-up failed: ${up.status} ${up.text}`);
  const r = await c.req('POST', '/api/auth/api-tokens', { name });
  if (r.status !== 201) throw new Error(`token creation failed: ${r.status} ${r.text}`);
  return r.body.token;
}

/**
 * Reveals a variable the way an operator must: signed in, then a step-up (reveal needs a recent
 * one). It runs in a session of its own, so the caller's session is not left stepped up for the
 * tests that expect step_up_required. Answers the reveal's own response.
 */
export async function reveal(
  c: Client,
  appId: string,
  key: string,
  operator: { username: string; password: string } = ADMIN,
): Promise<{ status: number; body: any; text: string }> {
  const own = new Client(c.base, c.headers);
  const login = await own.req('POST', '/api/auth/login', operator);
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  const up = await own.req('POST', '/api/auth/step-up', { password: operator.password });
  if (up.status !== 200) throw new Error(`step-up failed: ${up.status} ${up.text}`);
  return own.req('GET', `/api/apps/${appId}/env/${key}/reveal`);
}

/** A logger that keeps every line (parsed) in memory, for tests that assert on what is logged. */
export function memoryLogger(level = 'info'): { log: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const log = pino({ level, base: undefined }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  return { log, lines };
}
