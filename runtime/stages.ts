// The policy stages between a matched route and its handler: select, authenticate, CSRF,
// permission, reach, authorise, rate limit and parse. Each reads and fills the exchange
// (runtime/pipeline.ts) and throws an HttpError to refuse; the same functions run for a WebSocket
// upgrade (runtime/upgrade.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Services } from '#lib/http/handler.js';
import { METHODS, type Method, type Principal } from '#lib/http/handler.js';
import { HttpError, notFound } from '#lib/http/errors.js';
import { text } from '#lib/http/respond.js';
import { readJson, validationError } from '#lib/http/body.js';
import { parseCookies } from '#lib/http/cookies.js';
import type { HandlerModule, RouteHandler, RouteSpec } from '#lib/http/route.js';
import { authenticate as authenticateCredential, CSRF_COOKIE } from '#lib/auth/principal.js';
import { csrfFor } from '#lib/auth/sessions.js';
import { hasRecentStepUp } from '#lib/auth/stepup.js';
import { permit } from '#lib/auth/access.js';
import { safeEqual } from '#lib/crypto/random.js';
import { isPromise, type Maybe } from '#lib/util/maybe.js';
import type { Exchange, StageResult } from './pipeline.js';

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
export const isWrite = (x: Exchange): boolean => UNSAFE.has(x.effective);

/** Stage `select`: the handler of the method, or the 405 (or the metrics route's blind 404). */
export function select(x: Exchange): StageResult {
  const mod = x.route.module!;
  // A metrics route is closed to every method without its token, and never hints why: a 405
  // would confirm it exists.
  if (isMetricsModule(mod) && !x.site.metricsAllowed(x.headers.get('authorization')))
    return text('Not Found\n', 404);
  const handler = METHODS.includes(x.effective) ? mod[x.effective] : undefined;
  if (!handler) throw methodNotAllowed(mod, x.method);
  x.handler = handler;
  x.spec = handler.spec;
  x.policy = handler.spec.auth ?? 'operator';
}

function methodNotAllowed(mod: HandlerModule, method: string): HttpError {
  const allow = METHODS.filter((m) => mod[m]);
  if (mod.GET) allow.splice(1, 0, 'HEAD' as Method);
  return new HttpError('method_not_allowed', `Method ${method} is not allowed here`, undefined, {
    allow: allow.join(', '),
  });
}

const metricsModules = new WeakMap<HandlerModule, boolean>();
function isMetricsModule(mod: HandlerModule): boolean {
  let v = metricsModules.get(mod);
  if (v === undefined)
    metricsModules.set(
      mod,
      (v = METHODS.some((m) => (mod[m] as RouteHandler | undefined)?.spec.auth === 'metrics')),
    );
  return v;
}

// The scheme is case-insensitive (RFC 9110); the metrics token itself is compared whole.
const METRICS_BEARER = /^bearer[ \t]+(.+?)[ \t]*$/i;

/** Whether an Authorization header carries SVC_METRICS_TOKEN (compared in constant time). */
export function metricsGate(token: string | null | undefined): (authz: string | null) => boolean {
  const digest = token ? createHash('sha256').update(token).digest() : null;
  return (authz) => {
    const m = authz === null || digest === null ? null : METRICS_BEARER.exec(authz);
    return m !== null && timingSafeEqual(createHash('sha256').update(m[1]!).digest(), digest!);
  };
}

/** Stage `authenticate`: the operator behind the request, or 401 on a route that needs one. */
export function authenticate(x: Exchange): StageResult {
  if (x.policy !== 'operator') return;
  const p = authenticateCredential(x.site.env, x.headers);
  if (!isPromise(p)) return authenticated(x, p);
  return p.then((principal) => authenticated(x, principal));
}

function authenticated(x: Exchange, principal: Principal | null): void {
  if (!principal) throw new HttpError('unauthorized', 'Authentication required');
  x.principal = principal;
}

/** Stage `csrf`: cookie-backed writes echo the session's CSRF token and never come from another site. */
export function csrf(x: Exchange): StageResult {
  if (!isWrite(x) || x.policy === 'metrics') return;
  const { principal, headers } = x;
  if (principal !== null && principal.kind !== 'session') return;
  // A browser tells us when a request comes from another site: cookie-backed writes never do that.
  if (headers.get('sec-fetch-site') === 'cross-site' && headers.get('authorization') === null) {
    throw new HttpError('csrf_mismatch', 'Cross-site requests may not change state');
  }
  if (principal === null) return;
  const header = headers.get('x-csrf-token');
  const cookie = parseCookies(headers.get('cookie'))[CSRF_COOKIE];
  const expected = csrfFor(x.site.env.signingKey, principal.rawSession!);
  if (!header || !cookie || !safeEqual(header, expected) || !safeEqual(cookie, expected)) {
    throw new HttpError('csrf_mismatch', 'X-CSRF-Token header must echo the svc_csrf cookie of this session');
  }
}

/**
 * Stage `permission`: the route's permission, before anything about the app it names: asking
 * someone to prove presence, or telling them an app is absent, would mislead when they may not do
 * this at all.
 */
export function permission(x: Exchange): StageResult {
  if (x.principal) permit(x.principal, x.spec.permission);
}

const APP_ROUTE = /^\/api\/apps\/:id(?:\/|$)/;

/**
 * The app a route names: `/api/apps/{id}/...` by its path, others (a domain, an audit entry) by
 * their declared `app` lookup; undefined when it names none or the resource does not exist.
 */
function appOfRoute(env: Services, x: Exchange): Maybe<string | null | undefined> {
  if (x.spec.app) return x.spec.app(env, x.rawParams);
  return APP_ROUTE.test(x.route.pattern) ? x.rawParams.id : undefined;
}

/**
 * Stage `reach`: a caller limited to some apps gets 404 for any other app a route names, so its
 * existence is not revealed (lib/auth/access.ts decides). Keeps the app for the audit entry; a
 * lookup is paid only by limited callers and by writes.
 */
export function reach(x: Exchange): StageResult {
  const { principal, spec } = x;
  if (principal === null || (principal.appIds === null && spec.app && !isWrite(x))) return;
  const appId = appOfRoute(x.site.env, x);
  return isPromise(appId) ? appId.then((id) => reached(x, principal, id)) : reached(x, principal, appId);
}

function reached(x: Exchange, principal: Principal, appId: string | null | undefined): void {
  const { spec } = x;
  // A route that names no app acts outside every list (null).
  const names = spec.app !== undefined || spec.appInBody === true || APP_ROUTE.test(x.route.pattern);
  permit(principal, spec.permission, names ? appId : null);
  // For a limited caller, a missing domain or entry answers as one of another app does: neither is revealed.
  if (appId === undefined && spec.app && principal.appIds !== null) throw notFound('No such app');
  x.appId = appId;
}

/**
 * Stage `authorise`: a session where the route changes how its owner signs in; a recent step-up
 * where the route asks for one. A WebSocket route's effect is its upgrade: its step-up applies
 * there, while its plain GET only explains itself and answers the same with or without one.
 */
export function authorise(x: Exchange): StageResult {
  const { principal, spec } = x;
  if (principal === null) return;
  if (spec.sessionOnly && principal.kind !== 'session') {
    throw new HttpError(
      'forbidden',
      'An API token cannot change how its owner signs in: use a signed-in session',
    );
  }
  if (spec.stepUp && (x.upgrade || !spec.websocket)) requireStepUp(x.site.env, principal);
}

/** 403 step_up_required unless this credential stepped up within the last minutes. */
export function requireStepUp(env: Pick<Services, 'now'>, principal: Principal | null): void {
  if (principal && !hasRecentStepUp(principal, env.now())) {
    throw new HttpError(
      'step_up_required',
      'This operation needs a recent step-up: POST /api/auth/step-up first',
    );
  }
}

/** Stage `rate-limit`: per route and client address, for the routes that guess at secrets. */
export function rateLimit(x: Exchange): StageResult {
  if (!x.spec.rateLimit) return;
  const { env } = x.site;
  const r = env.authLimiter.hit(`${x.route.pattern}|${x.client.ip}`, env.now());
  if (!r.ok)
    throw new HttpError('rate_limited', 'Too many attempts; try again later', undefined, {
      'retry-after': String(r.retryAfter),
    });
}

/** Stage `parse`: path parameters, query and JSON body through the route's schemas (400 with details). */
export function parse(x: Exchange): StageResult {
  const spec = x.spec;
  let params: unknown = x.rawParams;
  if (spec.params) {
    const r = spec.params.safeParse(x.rawParams);
    if (!r.success) throw validationError(r.error, 'params');
    params = r.data;
  }
  const query = parseQuery(spec, x.search);
  const bodySchema = spec.body;
  if (!bodySchema || x.request === null) {
    x.input = { params, query, body: undefined };
    return;
  }
  return readJson(x.request, undefined, bodySchema.safeParse(undefined).success).then((raw) => {
    const r = bodySchema.safeParse(raw);
    if (!r.success) throw validationError(r.error, 'body');
    x.input = { params, query, body: r.data };
  });
}

const NO_QUERY = Object.freeze({});

function parseQuery(spec: RouteSpec, search: string): unknown {
  if (!search && !spec.query) return NO_QUERY;
  const raw: Record<string, string> = {};
  if (search) for (const [k, v] of new URLSearchParams(search)) if (!(k in raw)) raw[k] = v;
  if (!spec.query) return raw;
  const r = spec.query.safeParse(raw);
  if (!r.success) throw validationError(r.error, 'query');
  return r.data;
}
