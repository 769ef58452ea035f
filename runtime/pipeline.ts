// The request pipeline as data: a list of named stages, each `(exchange) => Response | nothing`
// (stop with that answer, or go on), run by one small loop that stays synchronous while every stage
// is. The dispatcher runs one list (runtime/dispatcher.ts), the WebSocket upgrade another built from
// the same stages (runtime/upgrade.ts); both turn a thrown error into the same answer (`failure`).
import type { Services } from '#lib/http/handler.js';
import type { AuditNote, Client, Ctx, Method, Principal, AuthPolicy } from '#lib/http/handler.js';
import type { HeaderGetter } from '#lib/http/headers.js';
import type { RouteHandler, RouteSpec } from '#lib/http/route.js';
import type { BlockList } from 'node:net';
import { ClientAbortError, HttpError } from '#lib/http/errors.js';
import { errorResponse } from '#lib/http/respond.js';
import { EngineUnavailableError, EngineConflictError, StackError } from '#lib/docker/engine.js';
import { isPromise, type Maybe } from '#lib/util/maybe.js';
import type { State, StateKindName } from '#lib/audit/kinds.js';
import type { RouteDef } from './route-types.js';
import type { Upgrades } from './upgrade.js';
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

/** A route's raw match: its index in the table and its decoded path parameters. */
export interface Matched {
  index: number;
  params: Record<string, string>;
}

/** What every exchange of one dispatcher (or upgrade path) shares: the services and the route table. */
export interface Site {
  env: Services;
  routes: RouteDef[];
  match: (method: string, target: string, qAt: number) => Maybe<Matched | null>;
  dashboard: Dashboard | null;
  trusted: BlockList;
  /** Whether an Authorization header carries the metrics bearer. */
  metricsAllowed: (authz: string | null) => boolean;
  /** The declaration of the route an audit action names (ctx.routeSpec). */
  routeSpec: (action: string) => Promise<RouteSpec | null>;
  /** Who is calling, as far as the socket and trusted proxies tell. */
  clientOf(x: Exchange): Client;
  /** The WebSocket routes served, on the upgrade's path (runtime/upgrade.ts). */
  upgrades?: Upgrades;
}

export interface ParsedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** What the audit stage read of a route's target before its handler ran. */
export interface StateBefore {
  kind: StateKindName;
  id: string | null;
  before: State | null;
}

// Request ids: a per-process prefix and a counter, unique across restarts for log correlation.
const ID_PREFIX = Date.now().toString(36) + '-';
let requestCounter = 0;

/**
 * What one request carries from stage to stage. Each stage fills in what it learnt; a field marked
 * `!` is set by the stage named beside it before any later stage reads it.
 */
export class Exchange {
  /** When the exchange began (performance.now()), for the request metrics. */
  readonly started = performance.now();
  readonly #serial = ++requestCounter;
  #requestId: string | undefined;
  readonly method: string;
  /** The method whose handler runs (HEAD is served by GET). */
  readonly effective: Method;
  /** The request target in origin form (`/path?query`), and where its query starts (-1: none). */
  readonly target: string;
  readonly qAt: number;
  /** The request metrics' label: the route's pattern once matched. */
  label = 'unmatched';
  route!: RouteDef; // match
  rawParams!: Record<string, string>; // match
  search = '';
  handler!: RouteHandler; // select
  spec!: RouteSpec; // select
  policy: AuthPolicy = 'operator';
  principal: Principal | null = null; // authenticate
  /** The app the route names, when the `reach` stage learnt it (the audit entry records it). */
  appId: string | null | undefined = undefined;
  input!: ParsedInput; // parse
  before: StateBefore | null = null; // state
  ctx!: Ctx; // call
  note: AuditNote | undefined = undefined;
  response!: Response; // call
  #client: Client | undefined;

  constructor(
    readonly site: Site,
    /** The Fetch Request; null on the upgrade path, whose stages read no body and call no handler. */
    readonly request: Request | null,
    readonly meta: RequestMeta,
    readonly headers: HeaderGetter,
    method: string,
    /** A WebSocket upgrade (runtime/upgrade.ts): a route's step-up applies to its upgrade. */
    readonly upgrade = false,
  ) {
    this.method = method;
    this.effective = (method === 'HEAD' ? 'GET' : method) as Method;
    // origin-form (`/path?query`) from the host; anything else is taken from the parsed URL.
    const target = meta.target?.startsWith('/')
      ? meta.target
      : request !== null
        ? targetOf(request.url)
        : '/';
    this.target = target;
    this.qAt = target.indexOf('?');
  }

  /** Unique across restarts, for log correlation (made when first asked for). */
  get requestId(): string {
    return (this.#requestId ??= ID_PREFIX + this.#serial.toString(36));
  }

  /** The path without the query. */
  get path(): string {
    return this.qAt >= 0 ? this.target.slice(0, this.qAt) : this.target;
  }

  /** Who is calling, as far as the socket and trusted proxies tell (made on first use). */
  get client(): Client {
    return (this.#client ??= this.site.clientOf(this));
  }
}

/** Continue (nothing), or stop with this answer; a promise of either when the stage waits. */
export type StageResult = Maybe<Response | void>;

export interface Stage {
  readonly name: string;
  readonly run: (x: Exchange) => StageResult;
}

/**
 * Runs the stages in order from `from` until one answers; nothing when all went on. Synchronous as
 * long as every stage is; a stage's throw or rejection is the caller's to turn into an answer.
 */
export function runStages(stages: readonly Stage[], x: Exchange, from = 0): StageResult {
  for (let i = from; i < stages.length; i++) {
    const out = stages[i]!.run(x);
    if (out === undefined) continue;
    if (isPromise(out)) return out.then((r) => (r === undefined ? runStages(stages, x, i + 1) : r));
    return out;
  }
  return undefined;
}

/** The answer to a thrown error, on every path: the contract's body (`lib/http/errors.ts`). */
export function failure(env: Pick<Services, 'log'>, e: unknown, requestId: string): Response {
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
