// The control plane in-process: the services built as the server builds them (a temporary data
// directory, its SQLite file, the setup token) and `request(path, init)` through the same dispatcher
// the node adapter calls (route matching, authentication, CSRF, step-up, rate limit, audit, error
// bodies), with no socket. What the adapter reads from the socket (the peer address, TLS) is given
// per app or per request. The Client of tests/_support/server.ts works against `app.url` unchanged.
//
// Every route a request reaches is recorded as "METHOD pattern" when SVC_TEST_HITS names a
// directory (scripts/run-tests.mjs sets it): tests/api/coverage.test.ts reads them.
import { mkdtemp, rm } from 'node:fs/promises';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Request } from '@whatwg-node/fetch';
import { loadConfig } from '#lib/config.js';
import type { Services } from '#lib/http/handler.js';
import { createLogger, type Logger } from '#lib/log.js';
import { DeployService, type DeployServiceOptions } from '#lib/deploy/service.js';
import { createEnv, announceSetup } from '../../runtime/boot.js';
import { createDispatcher, matcher, type Dispatcher, type RequestMeta } from '../../runtime/dispatcher.js';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';
import { loadDashboard } from '../../runtime/dashboard.js';
import { startBackground } from '../../runtime/background.js';
import type { Running } from '../../runtime/server.js';
import { engineSubnetGuard } from '#lib/net/engine-subnets.js';
import { isPromise } from '#lib/util/maybe.js';
import { TEST_MASTER_KEY, Client, adminClient, apiToken } from './server.js';
import { registerTransport } from './transport.js';
import { testDatabaseVars } from './postgres.js';
import { createClient, type SvcClient } from '../../client/index.js';

/** What the node adapter would have read from the socket. */
export interface SocketFacts {
  /** The peer address (default 127.0.0.1, a local client). */
  peer?: string;
  /** The request arrived over TLS to this process. */
  tls?: boolean;
}

export type RequestInitWithSocket = RequestInit & SocketFacts;

export interface TestApp {
  env: Services;
  app: Dispatcher;
  /** A base URL no socket listens on: the Client of tests/_support/server.ts sends it here. */
  url: string;
  dataDir: string;
  /** One request through the dispatcher; a path (`/api/health`) or an absolute URL on `url`. */
  request(path: string, init?: RequestInitWithSocket): Promise<Response>;
  /** The same for a whole Request (the typed client's `fetch` option). */
  fetch(request: Request): Promise<Response>;
  stop(): Promise<void>;
}

export interface TestAppOptions extends SocketFacts {
  log?: Logger;
  deploy?: Partial<DeployServiceOptions>;
  /** Serve the built dashboard for the GETs no route claims, as the server does. */
  dashboard?: boolean;
  /**
   * Run the server's background work (runtime/background.ts: notification channels, vitals, the
   * deployment queue, the engine's event follower...), stopped with the app.
   */
  background?: boolean;
  /**
   * The base URL the app answers on (default: one of its own on 127.0.x.y port 1), for a test
   * that must name it before the app exists (an OpenID provider's registered redirect URI).
   */
  url?: string;
  /**
   * Record the routes reached for tests/api/coverage.test.ts (default true). The permission matrix
   * turns it off: it calls every route with a body none accepts, which covers nothing.
   */
  record?: boolean;
}

/** The lowest SVC_PASSWORD_COST lib/config.ts accepts (log2 of scrypt's N). */
export const MIN_PASSWORD_COST = 10;

// Each app its own origin; port 1 is never ours, so a request that escapes to a socket fails.
let apps = 0;

/** The same configuration as startTestServer (tests/_support/server.ts), without the listener. */
export async function startTestApp(
  vars: Record<string, string> = {},
  opts: TestAppOptions = {},
): Promise<TestApp> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-test-'));
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    // The lowest cost the configuration accepts: an in-process test checks what hashing decides,
    // not what it costs (a test about the cost itself passes its own SVC_PASSWORD_COST).
    SVC_PASSWORD_COST: String(MIN_PASSWORD_COST),
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_LOG_LEVEL: 'silent',
    SVC_ACCESS_LOG: join(dataDir, 'access.log'),
    SVC_SECURITY_DIR: join(dataDir, 'security'),
    SVC_PROXY: 'off',
    ...(await testDatabaseVars()),
    ...vars,
  });
  const env = await createEnv(config, { log: opts.log ?? createLogger(config.logLevel) });
  if (opts.deploy) env.deployments = new DeployService(env, opts.deploy);
  await announceSetup(env);
  const app = createDispatcher(env, routes, { dashboard: opts.dashboard ? loadDashboard() : null });
  const url = opts.url ?? `http://127.0.${Math.floor(apps / 250)}.${(apps++ % 250) + 1}:1`;
  const closers: Array<() => Promise<void> | void> = [];
  if (opts.background) {
    // What startBackground reads of a running server; the edge (and its subnet guard) is off here.
    const running = {
      app,
      url,
      port: 0,
      subnets: engineSubnetGuard(env.engine),
      onClose: (fn: () => Promise<void> | void) => closers.push(fn),
    };
    startBackground(env, running as unknown as Running);
  }
  const pending = new Set<Promise<unknown>>();
  const waitUntil = (p: Promise<unknown>) => {
    const settled: Promise<unknown> = p.then(
      () => pending.delete(settled),
      () => pending.delete(settled),
    );
    pending.add(settled);
  };
  const record = opts.record === false ? async () => {} : hitRecorder();

  async function request(path: string, init: RequestInitWithSocket = {}): Promise<Response> {
    const { peer = opts.peer ?? '127.0.0.1', tls = opts.tls ?? false, ...rest } = init;
    const target = path.startsWith(url) ? path.slice(url.length) || '/' : path;
    if (!target.startsWith('/'))
      throw new Error(`in-process request to ${path}: give a path or a URL on ${url}`);
    const host = new URL(url).host;
    const req = new Request(`${tls ? 'https' : 'http'}://${host}${target}`, withFetchDefaults(rest, host));
    await record(req.method, target);
    const meta: RequestMeta = { peer, target, rawHeaders: nodeHeaders(req.headers), tls, waitUntil };
    const out = app.fetch(req, meta);
    return toWire(req.method, isPromise(out) ? await out : out);
  }

  const unregister = registerTransport(url, (u, i) => request(u, i));
  let stopping: Promise<void> | null = null;
  return {
    env,
    app,
    url,
    dataDir,
    request,
    fetch: async (r) =>
      request(r.url, {
        method: r.method,
        headers: r.headers,
        body: r.body ? await r.arrayBuffer() : undefined,
      }),
    stop: () =>
      (stopping ??= (async () => {
        unregister();
        while (pending.size) await Promise.all(pending);
        for (const fn of closers.reverse()) await fn();
        await env.db.destroy();
        await rm(dataDir, { recursive: true, force: true });
      })()),
  };
}

/** A client signed in as the first operator (setup done, session and CSRF cookies held). */
export function signedIn(app: TestApp): Promise<Client> {
  return adminClient(app);
}

/** A client that presents an API token (made by a stepped-up operator session) and no cookie. */
export async function bearer(app: TestApp, name = 'test'): Promise<Client> {
  const c = new Client(app.url);
  c.bearer = await apiToken(await signedIn(app), name);
  return c;
}

/**
 * The typed client (client/) over the app with an API token (a new one by default): tests written
 * with it fail the type check when an answer's shape changes, instead of reading `any`.
 */
export async function typedClient(app: TestApp, token?: string): Promise<SvcClient> {
  const raw = token ?? (await bearer(app)).bearer!;
  return createClient(app.url, { token: raw, fetch: (r) => app.fetch(r) });
}

// What fetch adds to every request on its own, so a handler sees the same headers either way.
function withFetchDefaults(init: RequestInit, host: string): RequestInit {
  const headers = new Headers(init.headers);
  for (const [k, v] of [
    ['host', host],
    ['accept', '*/*'],
    ['accept-language', '*'],
    ['sec-fetch-mode', 'cors'],
    ['user-agent', 'node'],
  ] as const)
    if (!headers.has(k)) headers.set(k, v);
  return { ...init, headers: [...headers] };
}

/** node:http's `req.headers`: lower-case names, one string each. */
function nodeHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((v, k) => (out[k] = v));
  return out;
}

const NULL_BODY = new Set([101, 204, 205, 304]);

/** The Response as a fetch client receives it: a platform Response, no body for HEAD. */
function toWire(method: string, r: Response): Response {
  const headers = new Headers();
  r.headers.forEach((v, k) => k !== 'set-cookie' && headers.append(k, v));
  for (const c of r.headers.getSetCookie()) headers.append('set-cookie', c);
  const body = method === 'HEAD' || NULL_BODY.has(r.status) ? null : r.body;
  return new Response(body, { status: r.status, statusText: r.statusText, headers });
}

/** "METHOD pattern" of each route reached, appended once per process to $SVC_TEST_HITS/<pid>. */
function hitRecorder(): (method: string, target: string) => Promise<void> {
  const dir = process.env.SVC_TEST_HITS;
  if (!dir) return async () => {};
  const match = matcher(routes);
  const seen = sharedSeen;
  return async (method, target) => {
    // A path the dispatcher refuses (bad encoding) reaches no handler: nothing to record.
    const m = await Promise.resolve()
      .then(() => match(method, target, target.indexOf('?')))
      .catch(() => null);
    if (m === null) return;
    const route = routes[m.index]!;
    const effective = method === 'HEAD' ? 'GET' : method;
    const mod = await routeModule(route);
    if (!(effective in mod)) return;
    const hit = `${effective} ${route.pattern}`;
    if (seen.has(hit)) return;
    seen.add(hit);
    appendFileSync(join(dir, `${process.pid}.txt`), hit + '\n');
  };
}
const sharedSeen = new Set<string>();

/**
 * The typed client over the app with the session a `Client` holds (its cookies and CSRF header as
 * they are now), for what only a session does (a session's own step-up, an owner's revert).
 */
export function typedSession(app: TestApp, session: Client): SvcClient {
  const headers: Record<string, string> = { cookie: session.cookieHeader() };
  const csrf = session.cookies.get('svc_csrf');
  if (csrf) headers['x-csrf-token'] = csrf;
  return createClient(app.url, { headers, fetch: (r) => app.fetch(r) });
}
