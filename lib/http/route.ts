// One declaration per route: its policy, its schemas and its handler. The runtime validates with
// the schemas, the OpenAPI document is generated from them, and the handler's ctx types are
// inferred from them, so no shape is written twice.
import type { z } from 'zod';
import { json, noContent, isHeaders, record, PlainResponse, Response, Headers } from './respond.js';
import type { AuthPolicy, Ctx, Method, PermissionName, Services } from './handler.js';
import type { Maybe } from '../util/maybe.js';

/** A response that is not JSON (Prometheus text, a preformatted body): documented by its media type. */
export interface RawSpec {
  readonly raw: string;
}
export const raw = (contentType: string): RawSpec => ({ raw: contentType });

/**
 * A JSON body whose zod schema is loaded only when the OpenAPI document is built: for a route that
 * answers without loading zod at all (the health check, which supervisors poll on an idle server
 * that has loaded no other route; zod is about 8 MB of its memory).
 */
export interface LazySchema<T extends z.ZodType = z.ZodType> {
  readonly lazy: () => Promise<T>;
}
export const lazySchema = <T extends z.ZodType>(load: () => Promise<T>): LazySchema<T> => ({ lazy: load });

/** A zod schema (JSON body), one loaded on demand, `null` (no body, e.g. 204) or a raw media type. */
export type ResponseSpec = z.ZodType | LazySchema | null | RawSpec;

/**
 * The kinds of audited state, registered by lib/audit/kinds.ts (declaration merging keeps http/
 * free of product areas while a route's `state.kind` is still checked against the real names).
 */
export interface AuditStateKinds {}
export type AuditKindName = keyof AuditStateKinds & string;

export type { PermissionName } from './handler.js';

/** What the audit stage records for a route (any method that declares it, and every authenticated write). */
export interface AuditSpec<C = Ctx> {
  action: string;
  /** The resource acted on; default: the path parameters. */
  target?: (ctx: C) => string | null | undefined;
  /**
   * The target's state, read by the audit stage before and after the handler (lib/revert/state.ts):
   * what makes the entry diffable and revertible. `id` undefined: a creation, whose id the handler
   * names through ctx.audit({ target }). A function resolves kind and id itself (the revert route).
   */
  state?:
    | { kind: AuditKindName; id?: (ctx: C) => string | null | undefined }
    | ((ctx: C) => Promise<AuditStateRef | null>);
}

export interface AuditStateRef {
  kind: AuditKindName;
  id: string | null;
}

export interface RouteSpec {
  summary: string;
  description?: string;
  /** Default `operator`. */
  auth?: AuthPolicy;
  /** Needs a recent step-up (403 step_up_required otherwise). */
  stepUp?: boolean;
  /**
   * Step-up for some of this route's effects only: the sentence says which, and the handler asks
   * for it through ctx.requireStepUp() when the request has such an effect. Step-up belongs to the
   * effect: a revert of this route's entry always needs it.
   */
  stepUpWhen?: string;
  /**
   * The permission the caller needs (lib/auth/roles.ts); an `app.*` permission is checked against
   * the app the route names as well. Every operator route declares one.
   */
  permission?: PermissionName;
  /**
   * The app an `app.*` route acts on when its path does not start with `/api/apps/{id}` (a domain,
   * an audit entry): undefined when the resource does not exist (the handler answers its own 404;
   * a caller limited to apps gets the one another app's resource gets, so neither is revealed).
   */
  app?: (env: Services, params: Record<string, string>) => Promise<string | null | undefined>;
  /**
   * The app is named in the body (or none is): the handler checks it through ctx.permit, with null
   * when the body names none. Without `app` or this, a route outside `/api/apps/{id}` names no app,
   * which a caller limited to some apps may read but not change.
   */
  appInBody?: true;
  /** Refused to API tokens (403 forbidden): the route changes how its owner signs in. */
  sessionOnly?: boolean;
  /** Rate-limited per client address (login, TOTP, step-up, setup). */
  rateLimit?: boolean;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  responses: Readonly<Record<number, ResponseSpec>>;
  audit?: AuditSpec<any>;
  /** Documented only: the runtime upgrades this route to a WebSocket before any handler runs. */
  websocket?: { description: string };
}

declare const typed: unique symbol;
/** A Response made by `ctx.reply`: only those satisfy a route's return type. */
export type TypedResponse<S extends number = number> = Response & { readonly [typed]: S };

type Out<T, Fallback> = T extends z.ZodType ? z.output<T> : Fallback;
type ReplyArgs<R> = R extends null
  ? [body?: null, headers?: Headers | Record<string, string>]
  : R extends RawSpec
    ? [body: string, headers?: Headers | Record<string, string>]
    : R extends z.ZodType
      ? [body: z.output<R>, headers?: Headers | Record<string, string>]
      : R extends LazySchema<infer T>
        ? [body: z.output<T>, headers?: Headers | Record<string, string>]
        : never;

export interface RouteCtx<S extends RouteSpec> extends Ctx<
  Out<S['params'], Record<string, string>>,
  Out<S['body'], undefined>,
  Out<S['query'], Record<string, unknown>>
> {
  /** Answers with one of the declared statuses and a body of its declared shape. */
  reply<K extends keyof S['responses'] & number>(
    status: K,
    ...args: ReplyArgs<S['responses'][K]>
  ): TypedResponse<K>;
}

export type RouteFn<S extends RouteSpec> = (request: Request, ctx: RouteCtx<S>) => Maybe<TypedResponse>;

/** What a handler file exports per method: callable with a plain ctx from any host, spec attached. */
export interface RouteHandler<S extends RouteSpec = RouteSpec> {
  (request: Request, ctx: Ctx): Maybe<Response>;
  readonly spec: S;
  /** The route's ctx.reply: a host that puts it on the ctx it builds saves the handler a copy of that ctx. */
  readonly reply?: Reply;
}

type Reply = (status: number, body?: unknown, headers?: Headers | Record<string, string>) => any;

/** What a handler file may export: one route() per method. */
export type HandlerModule = Partial<Record<Method, RouteHandler>>;

export function route<const S extends RouteSpec>(spec: S, fn: RouteFn<S>): RouteHandler<S> {
  const reply = replyFor(spec);
  // A ctx from another host gets this route's reply on top (its own properties and getters kept).
  const handler = (request: Request, ctx: Ctx) =>
    fn(
      request,
      (ctx as Partial<RouteCtx<S>>).reply === reply
        ? (ctx as RouteCtx<S>)
        : (Object.create(ctx, { reply: { value: reply } }) as RouteCtx<S>),
    );
  return Object.assign(handler, { spec, reply });
}

function replyFor(spec: RouteSpec): Reply {
  return (status, body, headers) => {
    const declared = spec.responses[status];
    if (declared === null) {
      if (headers !== undefined && isHeaders(headers)) return new Response(null, { status, headers });
      // A redirect (302 with its Location) has no body either, but keeps its status.
      return status === 204 ? noContent(headers) : new PlainResponse(null, status, record(headers));
    }
    if (declared !== undefined && 'raw' in declared) {
      if (headers === undefined || !isHeaders(headers)) {
        const h = record(headers);
        h['content-type'] ??= declared.raw;
        return new PlainResponse((body as string | undefined) ?? null, status, h);
      }
      const h = new Headers(headers);
      if (!h.has('content-type')) h.set('content-type', declared.raw);
      return new Response(body as string, { status, headers: h });
    }
    return json(body, status, headers);
  };
}
