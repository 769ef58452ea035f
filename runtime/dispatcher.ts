// The dispatcher: a request runs through named stages, each a small function of its own:
// match -> (load) -> select method -> authenticate -> CSRF -> authorise (permission, step-up,
// rate limit) -> reach (the app the route names) -> parse -> call -> audit -> answer. Handlers only see a Request and a ctx.
import { IttyRouter } from 'itty-router';
import { Response } from '@whatwg-node/fetch';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Services as Env } from '#lib/http/handler.js';
import { ClientAbortError, HttpError, badRequest, notFound } from '#lib/http/errors.js';
import { errorResponse, text } from '#lib/http/respond.js';
import { readJson, validationError } from '#lib/http/body.js';
import { parseCookies } from '#lib/http/cookies.js';
import { buildBlockList, clientAddress, forwardedSecure } from '#lib/http/client-address.js';
import { headerGetter, type HeaderGetter } from '#lib/http/headers.js';
import {
  METHODS,
  type AuditNote,
  type AuthPolicy,
  type Client,
  type Ctx,
  type Method,
  type Principal,
} from '#lib/http/handler.js';
import type { AuditSpec, AuditStateRef, HandlerModule, RouteHandler, RouteSpec } from '#lib/http/route.js';
import { authenticate, CSRF_COOKIE } from '#lib/auth/principal.js';
import { csrfFor } from '#lib/auth/sessions.js';
import { hasRecentStepUp } from '#lib/auth/stepup.js';
import { permit } from '#lib/auth/access.js';
import { recordAudit, routeAction, type AuditEntryInput } from '#lib/audit/index.js';
import type { State, StateKindName } from '#lib/audit/kinds.js';
import { safeEqual } from '#lib/crypto/random.js';
import { routeModule, type RouteDef } from './route-types.js';
import { EngineUnavailableError, EngineConflictError, StackError } from '#lib/docker/engine.js';
import { attempt, then, type Maybe } from '#lib/util/maybe.js';
import type { Dashboard } from './dashboard.js';

export interface RequestMeta {
  /** Socket peer address. */
  peer?: string;
  /**
   * The host's own view of the request line and headers (node:http's `req.url` and `req.headers`).
   * Reading these is much cheaper than the Fetch Request's lazily built URL and Headers, so the
   * dispatcher uses them when the host provides them; handlers still see the Request.
   */
  target?: string;
  rawHeaders?: Record<string, string | string[] | undefined>;
  /** The request arrived over TLS to this process. */
  tls?: boolean;
  waitUntil?: (p: Promise<unknown>) => void;
}

export interface Dispatcher {
  /** Synchronous when every step of the request is; a promise otherwise. Never rejects. */
  fetch(request: Request, meta?: RequestMeta): Response | Promise<Response>;
  routes: RouteDef[];
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const PARAM_MAX = 256;
// The scheme is case-insensitive (RFC 9110); the metrics token itself is compared whole.
const METRICS_BEARER = /^bearer[ \t]+(.+?)[ \t]*$/i;
const CATCH_ALL_MAX = 1024;

// Request ids: a per-process prefix and a counter, unique across restarts for log correlation.
const ID_PREFIX = Date.now().toString(36) + '-';
let requestCounter = 0;

/** What one request carries from stage to stage. */
export interface Exchange {
  request: Request;
  meta: RequestMeta;
  method: string;
  /** The method whose handler runs (HEAD is served by GET). */
  effective: Method;
  requestId: string;
  route: RouteDef;
  headers: HeaderGetter;
  rawParams: Record<string, string>;
  search: string;
  /** The app the route names, when the `reach` stage learnt it (the audit entry records it). */
  appId?: string | null;
}

interface Matched {
  index: number;
  params: Record<string, string>;
}

/**
 * Makes the dispatcher of a route table over a set of services. `dashboard`: the built
 * single-page client, answering the GETs no route claims (never /api, /webhooks).
 */
export function createDispatcher(
  env: Env,
  routes: RouteDef[],
  opts: { dashboard?: Dashboard | null } = {},
): Dispatcher {
  const dashboard = opts.dashboard ?? null;
  const match = matcher(routes);
  const metrics = env.metrics.requests;
  const trusted = buildBlockList(env.config.trustedProxies);
  const metricsAllowed = metricsGate(env.config.metricsToken);
  const routeSpec = specLookup(routes);

  function fetch(request: Request, meta: RequestMeta = {}): Maybe<Response> {
    const started = performance.now();
    const method = request.method.toUpperCase();
    const requestId = ID_PREFIX + (++requestCounter).toString(36);
    let label = 'unmatched';
    const out = attempt(
      () => {
        // origin-form (`/path?query`) from the host; anything else is taken from the parsed URL.
        const target = meta.target?.startsWith('/') ? meta.target : targetOf(request.url);
        const qAt = target.indexOf('?');
        return then(match(method, target, qAt), (m) => {
          if (m === null) {
            const page =
              dashboard === null
                ? null
                : serveDashboard(dashboard, request, meta, method, qAt >= 0 ? target.slice(0, qAt) : target);
            if (page === null) throw new HttpError('not_found', 'No such route');
            label = 'dashboard';
            return page;
          }
          const route = routes[m.index]!;
          label = route.pattern;
          const headers = meta.rawHeaders ? headerGetter(meta.rawHeaders) : request.headers;
          const search = qAt >= 0 ? target.slice(qAt + 1) : '';
          const effective = (method === 'HEAD' ? 'GET' : method) as Method;
          return run({
            request,
            meta,
            method,
            effective,
            requestId,
            route,
            headers,
            rawParams: m.params,
            search,
          });
        });
      },
      (e) => toErrorResponse(env, e, requestId),
    );
    return then(out, (response) =>
      answer(method, response, () =>
        metrics.observe(method, label, response.status, (performance.now() - started) / 1000),
      ),
    );
  }

  function run(x: Exchange): Maybe<Response> {
    if (!x.route.module) return routeModule(x.route).then(() => run(x));
    const handler = selectHandler(x.route.module, x, metricsAllowed);
    if (handler instanceof Response) return handler;
    const spec = handler.spec;
    const policy: AuthPolicy = spec.auth ?? 'operator';
    // Closed unless the exact bearer is presented; the answer never hints why.
    if (policy === 'metrics' && !metricsAllowed(x.headers.get('authorization')))
      return text('Not Found\n', 404);
    const client = clientOf(x, trusted);
    return then(authenticateStage(env, x.headers, policy), (principal) => {
      checkCsrf(env, x, principal, policy);
      // The permission first; then another app outside the caller's list is absent (404) before a step-up is asked for.
      if (principal) permit(principal, spec.permission);
      return then(
        reach(env, spec, x.route.pattern, x.rawParams, principal, UNSAFE.has(x.effective)),
        (appId) => {
          authorise(env, spec, principal);
          limitRate(env, spec, x.route, client);
          return then(parse(spec, x), (input) => {
            const note: { value?: AuditNote } = {};
            const ctx = contextFor(env, x, input, principal, client, note, routeSpec, handler.reply);
            x.appId = appId;
            const call = (before: StateBefore | null) => {
              const response = attempt(
                () => handler(x.request, ctx),
                (e) => toErrorResponse(env, e, x.requestId),
              );
              return then(response, (r) => audit(env, spec, x, ctx, note.value, r, before));
            };
            // Only routes that declare a state pay for reading it.
            return spec.audit?.state
              ? readBefore(env, spec.audit.state, ctx, x.requestId).then(call)
              : call(null);
          });
        },
      );
    });
  }

  return { fetch, routes };
}

/** Stage `match`: path -> route index and raw parameters; null for a path no route claims. */
export function matcher(
  routes: RouteDef[],
): (method: string, target: string, qAt: number) => Maybe<Matched | null> {
  const router = IttyRouter();
  routes.forEach((r, i) => router.all(r.pattern, () => i));
  // Paths without parameters are looked up directly; itty-router matches the rest in table order.
  const statics = new Map<string, number>();
  routes.forEach((r, i) => {
    if (!r.pattern.includes(':') && !statics.has(r.pattern)) statics.set(r.pattern, i);
  });
  const catchAllNames = routes.map((r) => new Set([...r.pattern.matchAll(/:(\w+)\+/g)].map((m) => m[1]!)));
  return (method, target, qAt) => {
    const path = qAt >= 0 ? target.slice(0, qAt) : target;
    const known = statics.get(path);
    if (known !== undefined) return { index: known, params: {} };
    const probe: { method: string; url: string; params?: Record<string, string> } = {
      method,
      url: 'http://h' + target,
    };
    return (router.fetch(probe) as Promise<number | undefined>).then((index) => {
      if (index === undefined) return null;
      return { index, params: probe.params ? decodeParams(probe.params, catchAllNames[index]!) : {} };
    });
  };
}

/** Stage `dashboard`: the unmatched path as a file of the built client, or null (404). */
function serveDashboard(
  dashboard: Dashboard,
  request: Request,
  meta: RequestMeta,
  method: string,
  path: string,
): Response | null {
  const headers = meta.rawHeaders ? headerGetter(meta.rawHeaders) : request.headers;
  return dashboard.serve(method, path, headers.get('accept-encoding'), headers.get('if-none-match'));
}

/** Stage `select`: the handler of the method, or the 405 (or the metrics route's blind 404). */
export function selectHandler(
  mod: HandlerModule,
  x: Exchange,
  metricsAllowed: (authz: string | null) => boolean,
): RouteHandler | Response {
  // A metrics route is closed to every method without its token: a 405 would confirm it exists.
  if (isMetricsModule(mod) && !metricsAllowed(x.headers.get('authorization')))
    return text('Not Found\n', 404);
  const handler = METHODS.includes(x.effective) ? mod[x.effective] : undefined;
  if (handler) return handler;
  const allow = METHODS.filter((m) => mod[m]);
  if (mod.GET) allow.splice(1, 0, 'HEAD' as Method);
  throw new HttpError('method_not_allowed', `Method ${x.method} is not allowed here`, undefined, {
    allow: allow.join(', '),
  });
}

const metricsModules = new WeakMap<HandlerModule, boolean>();
function isMetricsModule(mod: HandlerModule): boolean {
  let v = metricsModules.get(mod);
  if (v === undefined) metricsModules.set(mod, (v = METHODS.some((m) => mod[m]?.spec.auth === 'metrics')));
  return v;
}

/** Stage `authenticate`: the operator behind the request, or 401 on a route that needs one. */
export function authenticateStage(
  env: Env,
  headers: HeaderGetter,
  policy: AuthPolicy,
): Maybe<Principal | null> {
  if (policy !== 'operator') return null;
  return then(authenticate(env, headers), (principal) => {
    if (!principal) throw new HttpError('unauthorized', 'Authentication required');
    return principal;
  });
}

/** Stage `CSRF`: cookie-backed writes echo the session's CSRF token and never come from another site. */
export function checkCsrf(env: Env, x: Exchange, principal: Principal | null, policy: AuthPolicy): void {
  if (!UNSAFE.has(x.effective) || policy === 'metrics') return;
  if (principal !== null && principal.kind !== 'session') return;
  const { headers } = x;
  // A browser tells us when a request comes from another site: cookie-backed writes never do that.
  if (headers.get('sec-fetch-site') === 'cross-site' && headers.get('authorization') === null) {
    throw new HttpError('csrf_mismatch', 'Cross-site requests may not change state');
  }
  if (principal === null) return;
  const header = headers.get('x-csrf-token');
  const cookie = parseCookies(headers.get('cookie'))[CSRF_COOKIE];
  const expected = csrfFor(env.signingKey, principal.rawSession!);
  if (!header || !cookie || !safeEqual(header, expected) || !safeEqual(cookie, expected)) {
    throw new HttpError('csrf_mismatch', 'X-CSRF-Token header must echo the svc_csrf cookie of this session');
  }
}

/**
 * Stage `authorise`: a session where the route changes how its owner signs in; a recent step-up where the route asks
 * for one. A WebSocket route's effect is its upgrade, which runtime/ws.ts authorises with this same function
 * (`upgrade`); its plain GET only explains itself, so it answers the same with or without a step-up.
 */
export function authorise(env: Env, spec: RouteSpec, principal: Principal | null, upgrade = false): void {
  if (principal === null) return;
  // Before step-up: asking someone to prove presence for what they may not do anyway would mislead.
  permit(principal, spec.permission);
  if (spec.sessionOnly && principal.kind !== 'session') {
    throw new HttpError(
      'forbidden',
      'An API token cannot change how its owner signs in: use a signed-in session',
    );
  }
  if (spec.stepUp && (upgrade || !spec.websocket)) requireStepUp(env, principal);
}

const APP_ROUTE = /^\/api\/apps\/:id(?:\/|$)/;

/**
 * The app a route names: `/api/apps/{id}/...` by its path, others (a domain, an audit entry) by
 * their declared `app` lookup; undefined when it names none or the resource does not exist.
 */
export function appOfRoute(
  env: Env,
  spec: RouteSpec,
  pattern: string,
  params: Record<string, string>,
): Maybe<string | null | undefined> {
  if (spec.app) return spec.app(env, params);
  return APP_ROUTE.test(pattern) ? params.id : undefined;
}

/**
 * Stage `reach`: a caller limited to some apps gets 404 for any other app a route names, so its
 * existence is not revealed (lib/auth/access.ts decides). Answers the app for the audit entry;
 * a lookup is paid only by limited callers and by writes.
 */
export function reach(
  env: Env,
  spec: RouteSpec,
  pattern: string,
  params: Record<string, string>,
  principal: Principal | null,
  write: boolean,
): Maybe<string | null | undefined> {
  if (principal === null || (principal.appIds === null && spec.app && !write)) return undefined;
  // A route that names no app acts outside every list (null).
  const names = spec.app !== undefined || spec.appInBody === true || APP_ROUTE.test(pattern);
  return then(appOfRoute(env, spec, pattern, params), (appId) => {
    permit(principal, spec.permission, names ? appId : null);
    // For a limited caller, a missing domain or entry answers as one of another app does: neither is revealed.
    if (appId === undefined && spec.app && principal.appIds !== null) throw notFound('No such app');
    return appId;
  });
}

/** 403 step_up_required unless this credential stepped up within the last minutes. */
export function requireStepUp(env: Env, principal: Principal | null): void {
  if (principal && !hasRecentStepUp(principal, env.now())) {
    throw new HttpError(
      'step_up_required',
      'This operation needs a recent step-up: POST /api/auth/step-up first',
    );
  }
}

/** The declaration of the route an audit action names (`<METHOD> <pattern>`), loading its module. */
export function specLookup(routes: RouteDef[]): (action: string) => Promise<RouteSpec | null> {
  const byAction = new Map<string, { route: RouteDef; method: Method }>();
  for (const route of routes)
    for (const method of METHODS) byAction.set(routeAction(method, route.pattern), { route, method });
  return async (action) => {
    const hit = byAction.get(action);
    if (!hit) return null;
    return (await routeModule(hit.route))[hit.method]?.spec ?? null;
  };
}

/** Stage `rate limit`: per route and client address, for the routes that guess at secrets. */
export function limitRate(env: Env, spec: RouteSpec, route: RouteDef, client: Client): void {
  if (!spec.rateLimit) return;
  const r = env.authLimiter.hit(`${route.pattern}|${client.ip}`, env.now());
  if (!r.ok)
    throw new HttpError('rate_limited', 'Too many attempts; try again later', undefined, {
      'retry-after': String(r.retryAfter),
    });
}

export interface ParsedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** Stage `parse`: path parameters, query and JSON body through the route's schemas (400 with details). */
export function parse(spec: RouteSpec, x: Exchange): Maybe<ParsedInput> {
  let params: unknown = x.rawParams;
  if (spec.params) {
    const r = spec.params.safeParse(x.rawParams);
    if (!r.success) throw validationError(r.error, 'params');
    params = r.data;
  }
  let query: unknown = {};
  if (x.search || spec.query) {
    const raw: Record<string, string> = {};
    if (x.search) for (const [k, v] of new URLSearchParams(x.search)) if (!(k in raw)) raw[k] = v;
    query = raw;
    if (spec.query) {
      const r = spec.query.safeParse(raw);
      if (!r.success) throw validationError(r.error, 'query');
      query = r.data;
    }
  }
  const bodySchema = spec.body;
  if (!bodySchema) return { params, query, body: undefined };
  return readJson(x.request, undefined, bodySchema.safeParse(undefined).success).then((raw) => {
    const r = bodySchema.safeParse(raw);
    if (!r.success) throw validationError(r.error, 'body');
    return { params, query, body: r.data };
  });
}

function contextFor(
  env: Env,
  x: Exchange,
  input: ParsedInput,
  principal: Principal | null,
  client: Client,
  note: { value?: AuditNote },
  routeSpec: (action: string) => Promise<RouteSpec | null>,
  reply: RouteHandler['reply'] | undefined,
): Ctx & { reply?: RouteHandler['reply'] } {
  const requestId = x.requestId;
  return {
    params: input.params as Record<string, string>,
    query: input.query as Record<string, unknown>,
    body: input.body,
    env,
    principal,
    client,
    requestId,
    waitUntil: (p) => {
      const guarded = p.catch((err) => env.log.error({ err, requestId }, 'background task failed'));
      // The work runs either way; a host that can wait for it (graceful shutdown) is told.
      x.meta.waitUntil?.(guarded);
    },
    audit: (n) => {
      note.value = { ...note.value, ...n };
    },
    requireStepUp: () => requireStepUp(env, principal),
    permit: (permission, appId) => {
      if (principal) permit(principal, permission, appId);
    },
    routeSpec,
    reply,
  };
}

/**
 * Stage `audit`: one row for every route that declares an audit action, and for every
 * authenticated write, named by its `<METHOD> <pattern>` (the declared action is its finer event). The handler may refine
 * the entry through ctx.audit; it never writes one itself.
 */
export function audit(
  env: Env,
  spec: RouteSpec,
  x: Exchange,
  ctx: Ctx,
  note: AuditNote | undefined,
  response: Response,
  before: StateBefore | null = null,
): Maybe<Response> {
  if (note?.skip) return response;
  if (before !== null && response.status >= 200 && response.status < 300) {
    return readAfter(env, before, note, x.requestId).then((state) =>
      write(env, spec, x, ctx, note, response, state),
    );
  }
  return write(env, spec, x, ctx, note, response, null);
}

function write(
  env: Env,
  spec: RouteSpec,
  x: Exchange,
  ctx: Ctx,
  note: AuditNote | undefined,
  response: Response,
  state: AuditEntryInput['state'],
): Maybe<Response> {
  const principal = ctx.principal;
  const declared = spec.audit;
  if (!declared && !(principal && UNSAFE.has(x.effective))) return response;
  const actor = principal ? principal.user : note?.actor;
  let target: string | null | undefined = note?.target;
  if (target === undefined && declared?.target) target = safeTarget(declared.target, ctx);
  if (target === undefined) target = x.rawParams.id ?? Object.values(x.rawParams)[0] ?? null;
  return recordAudit(env.db, {
    route: routeAction(x.effective, x.route.pattern),
    actorType: principal
      ? principal.kind === 'token'
        ? 'token'
        : 'user'
      : actor || note?.claimed !== undefined
        ? 'user'
        : 'system',
    actorId: actor?.id ?? null,
    actor: actor?.username ?? note?.claimed ?? null,
    tokenId: principal?.kind === 'token' ? principal.credentialId : null,
    via: note?.via ?? principal?.kind ?? null,
    event: note?.action ?? declared?.action ?? null,
    summary: spec.summary,
    target,
    ip: ctx.client.ip,
    outcome: response.status,
    detail: note?.detail ?? null,
    state,
    revertOf: ok(response) ? (note?.revertOf ?? null) : null,
    appId: note?.appId !== undefined ? note.appId : (x.appId ?? undefined),
  }).then(
    (id) => (note?.answer && ok(response) ? note.answer(String(id)) : response),
    (err) => {
      env.log.error({ err, requestId: x.requestId }, 'audit write failed');
      return response;
    },
  );
}

const ok = (r: Response) => r.status >= 200 && r.status < 300;

// The readers reach into most product areas: loaded by the first audited change that declares a state, not at boot.
const stateKinds = () => import('#lib/revert/state.js').then((m) => m.STATE_KINDS);

/** What the audit stage read of a route's target before its handler ran. */
export interface StateBefore {
  kind: StateKindName;
  id: string | null;
  before: State | null;
}

/** Stage `audit`, first half: the declared target's state before the change (null: not recorded). */
function readBefore(
  env: Env,
  ref: NonNullable<AuditSpec['state']>,
  ctx: Ctx,
  requestId: string,
): Promise<StateBefore | null> {
  const resolve = async (): Promise<AuditStateRef | null> => {
    if (typeof ref === 'function') return ref(ctx);
    return { kind: ref.kind, id: ref.id ? (safeTarget(ref.id, ctx) ?? null) : null };
  };
  return resolve()
    .then(
      async (r) =>
        r === null
          ? null
          : {
              kind: r.kind,
              id: r.id,
              before: r.id === null ? null : await (await stateKinds())[r.kind].read(env, r.id),
            },
      (err) => {
        env.log.error({ err, requestId }, 'audit state read failed');
        return null;
      },
    )
    .catch((err) => {
      env.log.error({ err, requestId }, 'audit state read failed');
      return null;
    });
}

/** Second half: the state the change produced, under the id the handler named when it made one. */
async function readAfter(
  env: Env,
  b: StateBefore,
  note: AuditNote | undefined,
  requestId: string,
): Promise<AuditEntryInput['state']> {
  const id = note?.stateId ?? b.id ?? note?.target ?? null;
  if (id === null) return null;
  try {
    return { kind: b.kind, id, before: b.before, after: await (await stateKinds())[b.kind].read(env, id) };
  } catch (err) {
    env.log.error({ err, requestId }, 'audit state read failed');
    return null;
  }
}

function safeTarget(fn: (ctx: Ctx) => string | null | undefined, ctx: Ctx): string | null | undefined {
  try {
    return fn(ctx);
  } catch {
    return undefined;
  }
}

/** Stage `answer`: HEAD loses its body; the request is counted. */
export function answer(method: string, response: Response, observe: () => void): Response {
  if (method === 'HEAD')
    response = new Response(null, { status: response.status, headers: response.headers });
  observe();
  return response;
}

function clientOf(x: Exchange, trusted: ReturnType<typeof buildBlockList>): Client {
  const peer = x.meta.peer;
  return {
    ip: clientAddress(peer, x.headers.get('x-forwarded-for'), trusted),
    secure: x.meta.tls === true || forwardedSecure(peer, x.headers.get('x-forwarded-proto'), trusted),
    userAgent: x.headers.get('user-agent'),
  };
}

function metricsGate(token: string | null | undefined): (authz: string | null) => boolean {
  const digest = token ? createHash('sha256').update(token).digest() : null;
  return (authz) => {
    const m = authz === null || digest === null ? null : METRICS_BEARER.exec(authz);
    return m !== null && timingSafeEqual(createHash('sha256').update(m[1]!).digest(), digest!);
  };
}

function toErrorResponse(env: Env, e: unknown, requestId: string): Response {
  // An ordinary event (a closed tab, a cancelled upload): one line, no stack.
  if (e instanceof ClientAbortError) env.log.info({ requestId }, 'client aborted the request body');
  if (e instanceof HttpError) return errorResponse(e);
  const mapped = fromLibError(e);
  if (mapped) return errorResponse(mapped);
  env.log.error({ err: e, requestId }, 'unhandled error');
  return errorResponse(new HttpError('internal_error', `Internal error (request ${requestId})`));
}

/** lib/ errors that carry a meaning the client should see (engine down, state conflict...). */
function fromLibError(e: unknown): HttpError | null {
  if (e instanceof EngineUnavailableError) return new HttpError('service_unavailable', e.message);
  if (e instanceof EngineConflictError) return new HttpError('conflict', e.message);
  if (e instanceof StackError)
    return new HttpError('conflict', e.service ? `${e.service}: ${e.message}` : e.message);
  return null;
}

/** Path and query of an absolute URL string, without parsing the whole URL (hot path). */
function targetOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  const h = url.indexOf('#', start);
  return url.slice(start, h >= 0 ? h : url.length);
}

/** Path parameters arrive URL-encoded: decode them, and refuse what no id or name can contain. */
function decodeParams(raw: Record<string, string>, catchAll: Set<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    let v: string;
    try {
      v = decodeURIComponent(value);
    } catch {
      throw badRequest(`Path parameter "${name}" is not valid URL encoding`, [
        { field: name, message: 'bad percent-encoding' },
      ]);
    }
    const isCatchAll = catchAll.has(name);
    const bad =
      v.length === 0 ||
      v.length > (isCatchAll ? CATCH_ALL_MAX : PARAM_MAX) ||
      /[\u0000-\u001f\u007f]/.test(v) ||
      (!isCatchAll && v.includes('/')) ||
      v.split('/').some((seg) => seg === '..' || seg === '.');
    if (bad)
      throw badRequest(`Path parameter "${name}" is not acceptable`, [
        { field: name, message: 'empty, too long, or contains control characters, "/" or ".."' },
      ]);
    out[name] = v;
  }
  return out;
}
