// Stages `match` and `load`: the request target to a route of the table (its decoded parameters),
// the built dashboard for a GET no route claims, then the route's handler module.
import { IttyRouter } from 'itty-router';
import { HttpError, badRequest } from '#lib/http/errors.js';
import { isPromise, type Maybe } from '#lib/util/maybe.js';
import { routeModule, type RouteDef } from './route-types.js';
import type { Exchange, Matched, StageResult } from './pipeline.js';

const PARAM_MAX = 256;
const CATCH_ALL_MAX = 1024;

/** Path -> route index and raw parameters; null for a path no route claims. */
export function matcher(
  routes: RouteDef[],
): (method: string, target: string, qAt: number) => Maybe<Matched | null> {
  const router = IttyRouter();
  routes.forEach((r, i) => router.all(r.pattern, () => i));
  // Paths without parameters are looked up directly; itty-router matches the rest in table order.
  const statics = new Map<string, Matched>();
  routes.forEach((r, i) => {
    if (!r.pattern.includes(':') && !statics.has(r.pattern))
      statics.set(r.pattern, Object.freeze({ index: i, params: Object.freeze({}) }));
  });
  const catchAllNames = routes.map((r) => new Set([...r.pattern.matchAll(/:(\w+)\+/g)].map((m) => m[1]!)));
  return (method, target, qAt) => {
    const known = statics.get(qAt >= 0 ? target.slice(0, qAt) : target);
    if (known !== undefined) return known;
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

/** Stage `match`: the route and its parameters; the dashboard's file or 404 for a path no route claims. */
export function match(x: Exchange): StageResult {
  const m = x.site.match(x.method, x.target, x.qAt);
  return isPromise(m) ? m.then((found) => matched(x, found)) : matched(x, m);
}

function matched(x: Exchange, m: Matched | null): StageResult {
  if (m === null) return unmatched(x);
  const route = x.site.routes[m.index]!;
  x.route = route;
  x.label = route.pattern;
  x.rawParams = m.params;
  if (x.qAt >= 0) x.search = x.target.slice(x.qAt + 1);
}

/** A GET no route claims: a file of the built single-page client (never on an upgrade), or 404. */
function unmatched(x: Exchange): StageResult {
  const dashboard = x.site.dashboard;
  const page =
    dashboard === null || x.upgrade
      ? null
      : dashboard.serve(x.method, x.path, x.headers.get('accept-encoding'), x.headers.get('if-none-match'));
  if (page === null) throw new HttpError('not_found', 'No such route');
  x.label = 'dashboard';
  return page;
}

/** Stage `load`: the route's handler module, imported on its first request. */
export function load(x: Exchange): StageResult {
  if (!x.route.module) return routeModule(x.route).then(() => undefined);
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
