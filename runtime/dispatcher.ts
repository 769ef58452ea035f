// The dispatcher: a request runs through REQUEST_STAGES (runtime/pipeline.ts runs the list), each a
// small function of its own; a thrown error becomes the contract's body, and the answer (a HEAD's
// without its body) is counted. Handlers only see a Request and a ctx.
import { Response } from '@whatwg-node/fetch';
import type { Services } from '#lib/http/handler.js';
import { METHODS, type Method, type Client } from '#lib/http/handler.js';
import type { RouteSpec } from '#lib/http/route.js';
import { buildBlockList, clientAddress, forwardedSecure } from '#lib/http/client-address.js';
import { headerGetter } from '#lib/http/headers.js';
import { routeAction } from '#lib/audit/index.js';
import { isPromise, type Maybe } from '#lib/util/maybe.js';
import { routeModule, type RouteDef } from './route-types.js';
import type { Dashboard } from './dashboard.js';
import {
  Exchange,
  failure,
  runStages,
  type RequestMeta,
  type Site,
  type Stage,
  type StageResult,
} from './pipeline.js';
import { load, match, matcher } from './match.js';
import {
  authenticate,
  authorise,
  csrf,
  metricsGate,
  parse,
  permission,
  rateLimit,
  reach,
  select,
} from './stages.js';
import { audit, call, state } from './call.js';

export { matcher } from './match.js';
export type { RequestMeta, Exchange } from './pipeline.js';

export interface Dispatcher {
  /** Synchronous when every step of the request is; a promise otherwise. Never rejects. */
  fetch(request: Request, meta?: RequestMeta): Response | Promise<Response>;
  routes: RouteDef[];
}

/** A request's path, in order (docs/architecture.md "A request's path" lists the same names). */
export const REQUEST_STAGES: readonly Stage[] = [
  { name: 'match', run: match },
  { name: 'load', run: load },
  { name: 'select', run: select },
  { name: 'authenticate', run: authenticate },
  { name: 'csrf', run: csrf },
  { name: 'permission', run: permission },
  { name: 'reach', run: reach },
  { name: 'authorise', run: authorise },
  { name: 'rate-limit', run: rateLimit },
  { name: 'parse', run: parse },
  { name: 'state', run: state },
  { name: 'call', run: call },
  { name: 'audit', run: audit },
];

/** What the stages of one route table share (the dispatcher's and the upgrade's). */
export function createSite(env: Services, routes: RouteDef[], dashboard: Dashboard | null = null): Site {
  const trusted = buildBlockList(env.config.trustedProxies);
  return {
    env,
    routes,
    match: matcher(routes),
    dashboard,
    trusted,
    metricsAllowed: metricsGate(env.config.metricsToken),
    routeSpec: specLookup(routes),
    clientOf: (x): Client => {
      const peer = x.meta.peer;
      return {
        ip: clientAddress(peer, x.headers.get('x-forwarded-for'), trusted),
        secure: x.meta.tls === true || forwardedSecure(peer, x.headers.get('x-forwarded-proto'), trusted),
        userAgent: x.headers.get('user-agent'),
      };
    },
  };
}

/**
 * Makes the dispatcher of a route table over a set of services. `dashboard`: the built
 * single-page client, answering the GETs no route claims (never /api, /webhooks).
 */
export function createDispatcher(
  env: Services,
  routes: RouteDef[],
  opts: { dashboard?: Dashboard | null } = {},
): Dispatcher {
  const site = createSite(env, routes, opts.dashboard ?? null);
  const metrics = env.metrics.requests;

  // The counted answer: a HEAD without its body. No closure is made unless a stage waits.
  const done = (x: Exchange, response: Response): Response => {
    if (x.method === 'HEAD')
      response = new Response(null, { status: response.status, headers: response.headers });
    metrics.observe(x.method, x.label, response.status, (performance.now() - x.started) / 1000);
    return response;
  };
  const failed = (x: Exchange, e: unknown): Response => done(x, failure(env, e, x.requestId));

  function fetch(request: Request, meta: RequestMeta = {}): Maybe<Response> {
    const headers = meta.rawHeaders ? headerGetter(meta.rawHeaders) : request.headers;
    const x = new Exchange(site, request, meta, headers, request.method.toUpperCase());
    let r: StageResult;
    try {
      r = runStages(REQUEST_STAGES, x);
    } catch (e) {
      return failed(x, e);
    }
    if (!isPromise(r)) return done(x, r ?? x.response);
    return r.then(
      (v) => done(x, v ?? x.response),
      (e) => failed(x, e),
    );
  }

  return { fetch, routes };
}

/** The declaration of the route an audit action names (`<METHOD> <pattern>`), loading its module. */
function specLookup(routes: RouteDef[]): (action: string) => Promise<RouteSpec | null> {
  const byAction = new Map<string, { route: RouteDef; method: Method }>();
  for (const route of routes)
    for (const method of METHODS) byAction.set(routeAction(method, route.pattern), { route, method });
  return async (action) => {
    const hit = byAction.get(action);
    if (!hit) return null;
    return (await routeModule(hit.route))[hit.method]?.spec ?? null;
  };
}
