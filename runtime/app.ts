// The dispatcher: route table -> central policy (auth, CSRF, step-up, rate limit, validation)
// -> handler -> audit and metrics. Handlers only see a Request and a ctx.
import { IttyRouter } from 'itty-router';
import { Response } from '@whatwg-node/fetch';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Env } from '../lib/env.js';
import { ClientAbortError, HttpError, badRequest } from '../lib/http/errors.js';
import { errorResponse, text } from '../lib/http/respond.js';
import { readJson, validationError } from '../lib/http/body.js';
import { parseCookies } from '../lib/http/cookies.js';
import { buildBlockList, clientAddress, forwardedSecure } from '../lib/http/client.js';
import { METHODS, type AuditNote, type AuthPolicy, type Client, type Ctx, type HandlerModule, type Method, type Principal } from '../lib/http/handler.js';
import { authenticate, CSRF_COOKIE } from '../lib/auth/principal.js';
import { csrfFor } from '../lib/auth/sessions.js';
import { hasRecentStepUp } from '../lib/auth/stepup.js';
import { recordAudit } from '../lib/audit/index.js';
import { safeEqual } from '../lib/crypto/random.js';
import { routeModule, type RouteDef } from './route-types.js';
import { EngineUnavailableError, EngineConflictError, StackError } from '../lib/docker/engine.js';
import { attempt, isPromise, then, type Maybe } from '../lib/util/maybe.js';
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

export interface App {
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

/** `dashboard`: the built single-page client, answering the GETs no route claims (never /api, /webhooks). */
export function createApp(env: Env, routes: RouteDef[], opts: { dashboard?: Dashboard | null } = {}): App {
  const dashboard = opts.dashboard ?? null;
  const router = IttyRouter();
  routes.forEach((r, i) => router.all(r.pattern, () => i));
  // Paths without parameters are looked up directly; itty-router matches the rest in table order.
  const statics = new Map<string, number>();
  routes.forEach((r, i) => {
    if (!r.pattern.includes(':') && !statics.has(r.pattern)) statics.set(r.pattern, i);
  });
  const metrics = env.metrics.requests;
  const trusted = buildBlockList(env.config.trustedProxies);
  const catchAllNames = routes.map((r) => new Set([...r.pattern.matchAll(/:(\w+)\+/g)].map((m) => m[1]!)));
  const metricsDigest = env.config.metricsToken ? createHash('sha256').update(env.config.metricsToken).digest() : null;
  const metricsAllowed = (authz: string | null): boolean => {
    const m = authz === null || metricsDigest === null ? null : METRICS_BEARER.exec(authz);
    return m !== null && timingSafeEqual(createHash('sha256').update(m[1]!).digest(), metricsDigest!);
  };

  function fetch(request: Request, meta: RequestMeta = {}): Maybe<Response> {
    const started = performance.now();
    const method = request.method.toUpperCase();
    const requestId = ID_PREFIX + (++requestCounter).toString(36);
    let label = 'unmatched';
    const finish = (response: Response): Response => {
      if (method === 'HEAD') response = new Response(null, { status: response.status, headers: response.headers });
      metrics.observe(method, label, response.status, (performance.now() - started) / 1000);
      return response;
    };
    const out = attempt(
      () => {
        // origin-form (`/path?query`) from the host; anything else is taken from the parsed URL.
        const target = meta.target?.startsWith('/') ? meta.target : targetOf(request.url);
        const qAt = target.indexOf('?');
        const path = qAt >= 0 ? target.slice(0, qAt) : target;
        let probe: { method: string; url: string; params?: Record<string, string> } | undefined;
        const found = statics.get(path) ?? (router.fetch((probe = { method, url: 'http://h' + target })) as Promise<number | undefined>);
        return then(found, (index) => {
          if (index === undefined) {
            const page = dashboard === null ? null : serveDashboard(dashboard, request, meta, method, path);
            if (page !== null) {
              label = 'dashboard';
              return page;
            }
            throw new HttpError('not_found', 'No such route');
          }
          const route = routes[index]!;
          label = route.pattern;
          const headers = meta.rawHeaders ? nodeHeaders(meta.rawHeaders) : request.headers;
          const params = probe?.params ? decodeParams(probe.params, catchAllNames[index]!) : {};
          return dispatch(request, headers, qAt >= 0 ? target.slice(qAt + 1) : '', meta, route, params, method, requestId);
        });
      },
      (e) => toErrorResponse(e, requestId),
    );
    return isPromise(out) ? out.then(finish) : finish(out);
  }

  function toErrorResponse(e: unknown, requestId: string): Response {
    // An ordinary event (a closed tab, a cancelled upload): one line, no stack.
    if (e instanceof ClientAbortError) env.log.info({ requestId }, 'client aborted the request body');
    if (e instanceof HttpError) return errorResponse(e);
    const mapped = fromLibError(e);
    if (mapped) return errorResponse(mapped);
    env.log.error({ err: e, requestId }, 'unhandled error');
    return errorResponse(new HttpError('internal_error', `Internal error (request ${requestId})`));
  }

  function dispatch(request: Request, headers: HeaderGetter, search: string, meta: RequestMeta, route: RouteDef, params: Record<string, string>, method: string, requestId: string): Maybe<Response> {
    const mod = route.module;
    if (!mod) return routeModule(route).then(() => dispatch(request, headers, search, meta, route, params, method, requestId));
    const effective = (method === 'HEAD' ? 'GET' : method) as Method;
    // A metrics route is closed to every method without its token: a 405 would confirm it exists.
    if (mod.auth === 'metrics' && !metricsAllowed(headers.get('authorization'))) return text('Not Found\n', 404);
    const handler = METHODS.includes(effective) ? mod[effective] : undefined;
    if (!handler) {
      const allow = METHODS.filter((m) => mod[m]);
      if (mod.GET) allow.splice(1, 0, 'HEAD' as Method);
      throw new HttpError('method_not_allowed', `Method ${method} is not allowed here`, undefined, { allow: allow.join(', ') });
    }
    const policy = policyOf(mod, effective);
    const peer = meta.peer;
    const client: Client = {
      ip: clientAddress(peer, headers.get('x-forwarded-for'), trusted),
      secure: meta.tls === true || forwardedSecure(peer, headers.get('x-forwarded-proto'), trusted),
      userAgent: headers.get('user-agent'),
    };

    // Closed unless the exact bearer is presented; the answer never hints why.
    if (policy === 'metrics' && !metricsAllowed(headers.get('authorization'))) return text('Not Found\n', 404);

    let principal: Principal | null = null;
    const unsafe = UNSAFE.has(effective);
    if (policy === 'operator') {
      principal = authenticate(env, headers);
      if (!principal) throw new HttpError('unauthorized', 'Authentication required');
    }
    if (unsafe && policy !== 'metrics' && (principal === null || principal.kind === 'session')) {
      // A browser tells us when a request comes from another site: cookie-backed writes never do that.
      if (headers.get('sec-fetch-site') === 'cross-site' && headers.get('authorization') === null) {
        throw new HttpError('csrf_mismatch', 'Cross-site requests may not change state');
      }
    }
    if (principal?.kind === 'session' && unsafe) {
      const header = headers.get('x-csrf-token');
      const cookie = parseCookies(headers.get('cookie'))[CSRF_COOKIE];
      const expected = csrfFor(env.signingKey, principal.rawSession!);
      if (!header || !cookie || !safeEqual(header, expected) || !safeEqual(cookie, expected)) {
        throw new HttpError('csrf_mismatch', 'X-CSRF-Token header must echo the svc_csrf cookie of this session');
      }
    }
    if (principal && mod.stepUp?.includes(effective) && !hasRecentStepUp(principal, env.now())) {
      throw new HttpError('step_up_required', 'This operation needs a recent step-up: POST /api/auth/step-up first');
    }
    if (mod.rateLimit?.includes(effective)) {
      const r = env.authLimiter.hit(`${route.pattern}|${client.ip}`, env.now());
      if (!r.ok) throw new HttpError('rate_limited', 'Too many attempts; try again later', undefined, { 'retry-after': String(r.retryAfter) });
    }

    const schema = mod.schema;
    let parsedParams: unknown = params;
    if (schema?.params) {
      const r = schema.params.safeParse(params);
      if (!r.success) throw validationError(r.error, 'params');
      parsedParams = r.data;
    }
    let query: unknown = {};
    if (search || schema?.query) {
      const raw: Record<string, string> = {};
      if (search) for (const [k, v] of new URLSearchParams(search)) if (!(k in raw)) raw[k] = v;
      query = raw;
      if (schema?.query) {
        const r = schema.query.safeParse(raw);
        if (!r.success) throw validationError(r.error, 'query');
        query = r.data;
      }
    }

    const invoke = (body: unknown): Maybe<Response> => {
      let note: AuditNote | undefined;
      const ctx: Ctx = {
        params: parsedParams as Record<string, string>,
        query: query as Record<string, unknown>,
        body,
        env,
        principal,
        client,
        requestId,
        waitUntil: (p) => {
          const guarded = p.catch((err) => env.log.error({ err, requestId }, 'background task failed'));
          // The work runs either way; a host that can wait for it (graceful shutdown) is told.
          meta.waitUntil?.(guarded);
        },
        audit: (n) => {
          note = { ...note, ...n };
        },
      };
      const response = attempt(
        () => handler(request, ctx),
        (e) => toErrorResponse(e, requestId),
      );
      if (!principal || !unsafe) return response;
      const who = principal;
      return then(response, (r) =>
        recordAudit(env.db, {
          actorId: who.user.id,
          actor: who.user.username,
          via: who.kind,
          action: note?.action ?? `${effective} ${route.pattern}`,
          target: note?.target ?? (Object.keys(params).length ? JSON.stringify(params) : null),
          ip: client.ip,
          outcome: r.status,
          detail: note?.detail ?? null,
        }).then(
          () => r,
          (err) => {
            env.log.error({ err, requestId }, 'audit write failed');
            return r;
          },
        ),
      );
    };

    const bodySchema = schema?.body?.[effective];
    if (!bodySchema) return invoke(undefined);
    return readJson(request).then((raw) => {
      const r = bodySchema.safeParse(raw);
      if (!r.success) throw validationError(r.error, 'body');
      return invoke(r.data);
    });
  }

  return { fetch, routes };
}

function serveDashboard(dashboard: Dashboard, request: Request, meta: RequestMeta, method: string, path: string): Response | null {
  const headers = meta.rawHeaders ? nodeHeaders(meta.rawHeaders) : request.headers;
  return dashboard.serve(method, path, headers.get('accept-encoding'), headers.get('if-none-match'));
}

/** lib/ errors that carry a meaning the client should see (engine down, state conflict...). */
function fromLibError(e: unknown): HttpError | null {
  if (e instanceof EngineUnavailableError) return new HttpError('service_unavailable', e.message);
  if (e instanceof EngineConflictError) return new HttpError('conflict', e.message);
  if (e instanceof StackError) return new HttpError('conflict', e.service ? `${e.service}: ${e.message}` : e.message);
  return null;
}

interface HeaderGetter {
  get(name: string): string | null;
}

/** Path and query of an absolute URL string, without parsing the whole URL (hot path). */
function targetOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  const h = url.indexOf('#', start);
  return url.slice(start, h >= 0 ? h : url.length);
}

/** node:http's header object as a Fetch-style getter (names arrive lower-cased). */
function nodeHeaders(raw: Record<string, string | string[] | undefined>): HeaderGetter {
  return {
    get(name) {
      const v = raw[name];
      if (v === undefined) return null;
      return Array.isArray(v) ? v.join(', ') : v;
    },
  };
}

function policyOf(mod: HandlerModule, method: Method): AuthPolicy {
  const a = mod.auth;
  if (a === undefined) return 'operator';
  if (typeof a === 'string') return a;
  return a[method] ?? 'operator';
}

/** Path parameters arrive URL-encoded: decode them, and refuse what no id or name can contain. */
function decodeParams(raw: Record<string, string>, catchAll: Set<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    let v: string;
    try {
      v = decodeURIComponent(value);
    } catch {
      throw badRequest(`Path parameter "${name}" is not valid URL encoding`, [{ field: name, message: 'bad percent-encoding' }]);
    }
    const isCatchAll = catchAll.has(name);
    const bad =
      v.length === 0 ||
      v.length > (isCatchAll ? CATCH_ALL_MAX : PARAM_MAX) ||
      /[\u0000-\u001f\u007f]/.test(v) ||
      (!isCatchAll && v.includes('/')) ||
      v.split('/').some((seg) => seg === '..' || seg === '.');
    if (bad) throw badRequest(`Path parameter "${name}" is not acceptable`, [{ field: name, message: 'empty, too long, or contains control characters, "/" or ".."' }]);
    out[name] = v;
  }
  return out;
}
