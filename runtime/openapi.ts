// The OpenAPI 3.1 document of the whole API, made from the route table and each route's spec:
// paths from the table, shapes from the zod schemas (z.toJSONSchema), policy from the spec.
// scripts/gen-openapi.mjs writes it to api/openapi.json at build time.
import { z } from 'zod';
import { METHODS, type Method } from '#lib/http/handler.js';
import type { ResponseSpec, RouteSpec } from '#lib/http/route.js';
import * as wire from '#lib/api/index.js';
import { components, errorSchema } from '#lib/api/common.js';
import { routeModule, type RouteDef } from './route-types.js';

type Json = Record<string, unknown>;

const REF = (id: string) => `#/components/schemas/${id}`;
const ERROR = { 'application/json': { schema: { $ref: REF('Error') } } };
const STATUS_TEXT: Record<number, string> = {
  101: 'Switching Protocols',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  302: 'Found (see the Location header)',
};

/** `/api/apps/:id/env/:key` -> `/api/apps/{id}/env/{key}` (catch-alls too). */
export const openApiPath = (pattern: string) => pattern.replace(/:(\w+)\+?/g, '{$1}');

const operationId = (method: Method, pattern: string) =>
  method.toLowerCase() +
  pattern
    .split('/')
    .filter(Boolean)
    .map((s) => (s.startsWith(':') ? 'By' + cap(s.replace(/[:+]/g, '')) : s.split(/[-.]/).map(cap).join('')))
    .join('');
const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The spec with every lazily loaded response schema (lib/http/route.ts, lazySchema) loaded. */
async function loadSchemas(spec: RouteSpec): Promise<RouteSpec> {
  if (!Object.values(spec.responses).some((r) => r && 'lazy' in r)) return spec;
  const responses: Record<number, ResponseSpec> = {};
  for (const [status, r] of Object.entries(spec.responses))
    responses[Number(status)] = r && 'lazy' in r ? await r.lazy() : r;
  return { ...spec, responses };
}

export async function buildOpenApi(routes: RouteDef[], version: string): Promise<Json> {
  // Request and response schemas live in two registries: a request is documented as it may be
  // sent (zod's input side: defaults optional), a response as it is answered (the output side).
  const requests = z.registry<{ id: string }>();
  const responses = z.registry<{ id: string; description?: string }>();
  for (const [schema, meta] of registryEntries()) responses.add(schema, meta);
  const paths: Json = {};
  const ops: { path: string; method: Method; spec: RouteSpec; id: string }[] = [];
  for (const route of routes) {
    const mod = await routeModule(route);
    for (const method of METHODS) {
      const handler = mod[method];
      if (!handler) continue;
      const id = operationId(method, route.pattern);
      const spec = await loadSchemas(handler.spec);
      ops.push({ path: openApiPath(route.pattern), method, spec, id });
      if (spec.body && !requests.has(spec.body)) requests.add(spec.body, { id: cap(id) + 'Body' });
      for (const [status, r] of Object.entries(spec.responses)) {
        if (r && !('raw' in r) && !('lazy' in r) && !responses.has(r))
          responses.add(r, { id: `${cap(id)}${status}` });
      }
    }
  }
  const uri = (id: string) => REF(id);
  const out = z.toJSONSchema(responses, { uri, io: 'output', unrepresentable: 'any' }).schemas;
  const inp = z.toJSONSchema(requests, { uri, io: 'input', unrepresentable: 'any' }).schemas;
  const schemas: Json = {};
  for (const [id, s] of [...Object.entries(out), ...Object.entries(inp)]) schemas[id] = clean(s as Json);

  for (const op of ops) {
    const item = (paths[op.path] ??= {}) as Json;
    item[op.method.toLowerCase()] = operation(op, requests, responses);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc control plane API',
      version,
      description:
        'JSON over HTTP. Authenticate with the `svc_session` cookie (plus the `X-CSRF-Token` header on writes) or `Authorization: Bearer <API token>`. ' +
        'Every error answers the `Error` body. Operations marked `x-step-up` need a recent POST /api/auth/step-up (403 `step_up_required` otherwise). ' +
        '`x-permission` names the permission an operation needs (403 `forbidden` without it); an `app.*` permission reaches only ' +
        "the apps of the caller's list: another app answers 404 `not_found`, and listings leave it out.",
      license: { name: 'Proprietary', identifier: 'LicenseRef-svc' },
    },
    servers: [{ url: '/' }],
    security: [{ session: [], csrf: [] }, { bearer: [] }],
    paths,
    components: {
      schemas,
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([name, r]) => [
          name,
          { description: r.description, content: ERROR },
        ]),
      ),
      securitySchemes: {
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'svc_session',
          description: 'Set by POST /api/auth/login (or /api/auth/totp).',
        },
        csrf: {
          type: 'apiKey',
          in: 'header',
          name: 'X-CSRF-Token',
          description:
            'Echo of the `svc_csrf` cookie; required on cookie-authenticated POST, PUT, PATCH and DELETE.',
        },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API token (`svc_...`) from POST /api/auth/api-tokens.',
        },
        metricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'SVC_METRICS_TOKEN; only for GET /metrics.',
        },
      },
    },
  };
}

function registryEntries(): [z.ZodType, { id: string; description?: string }][] {
  // The named shapes first, so that every reference to them is a $ref.
  const out: [z.ZodType, { id: string; description?: string }][] = [[errorSchema, { id: 'Error' }]];
  for (const schema of namedSchemas) {
    const meta = components.get(schema);
    if (meta && meta.id !== 'Error') out.push([schema, meta]);
  }
  return out;
}

// A registry cannot be listed: the named schemas are found among the module's exports.
const namedSchemas = (Object.values(wire) as unknown[]).filter(
  (v): v is z.ZodType => v instanceof z.ZodType && components.has(v),
);

function operation(
  op: { path: string; method: Method; spec: RouteSpec; id: string },
  requests: z.core.$ZodRegistry<{ id: string }>,
  responses: z.core.$ZodRegistry<{ id: string }>,
): Json {
  const { spec } = op;
  const auth = spec.auth ?? 'operator';
  const description = [
    spec.description,
    spec.websocket?.description,
    spec.stepUp
      ? 'Needs a recent step-up (POST /api/auth/step-up); without it: 403 `step_up_required`.'
      : undefined,
    spec.stepUpWhen
      ? `Needs a recent step-up when ${spec.stepUpWhen}; without it: 403 \`step_up_required\`.`
      : undefined,
    spec.sessionOnly
      ? 'Refused to API tokens (403 `forbidden`): it changes how its owner signs in.'
      : undefined,
  ]
    .filter(Boolean)
    .join('\n\n');
  const o: Json = { operationId: op.id, summary: spec.summary, tags: [tagOf(op.path)] };
  if (description) o.description = description;
  if (auth === 'public') o.security = [];
  if (auth === 'metrics') o.security = [{ metricsToken: [] }];
  if (spec.stepUp) o['x-step-up'] = true;
  else if (spec.stepUpWhen) o['x-step-up'] = 'conditional';
  if (spec.permission) o['x-permission'] = spec.permission;
  if (spec.sessionOnly) o['x-session-only'] = true;
  if (spec.rateLimit) o['x-rate-limited'] = true;
  if (spec.websocket) o['x-websocket'] = true;
  const parameters = [...paramsOf(spec.params, 'path'), ...paramsOf(spec.query, 'query')];
  // Path parameters without a schema are still parameters.
  for (const name of [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)) {
    if (!parameters.some((p) => p.in === 'path' && p.name === name))
      parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
  }
  if (parameters.length) o.parameters = parameters;
  if (spec.body)
    o.requestBody = {
      required: true,
      content: { 'application/json': { schema: { $ref: REF(requests.get(spec.body)!.id) } } },
    };
  const res: Json = {};
  for (const [status, r] of Object.entries(spec.responses)) {
    const code = Number(status);
    const description = STATUS_TEXT[code] ?? 'Answer';
    if (r === null) res[status] = { description };
    else if ('raw' in r)
      res[status] = { description, content: { [r.raw.split(';')[0]!]: { schema: { type: 'string' } } } };
    else if ('lazy' in r) throw new Error(`${op.id}: a lazy response schema was not loaded`);
    else
      res[status] = {
        description,
        content: { 'application/json': { schema: { $ref: REF(responses.get(r)!.id) } } },
      };
  }
  for (const [status, ref] of errorsOf(spec, op)) res[status] ??= ref;
  o.responses = res;
  return o;
}

const ERROR_RESPONSES: Record<string, { status: string; description: string }> = {
  BadRequest: { status: '400', description: 'Invalid parameter, query or body (`bad_request`)' },
  Unauthorized: {
    status: '401',
    description: 'No or invalid credentials (`unauthorized`, `invalid_credentials`)',
  },
  Forbidden: {
    status: '403',
    description:
      'Without the permission the operation names in `x-permission` (`forbidden`), a cookie write without the CSRF token of its session ' +
      '(`csrf_mismatch`), or a step-up operation without a recent step-up (`step_up_required`)',
  },
  NotFound: { status: '404', description: 'No such resource (`not_found`)' },
  RateLimited: {
    status: '429',
    description: 'Too many attempts (`rate_limited`, with a Retry-After header)',
  },
  Failure: {
    status: 'default',
    description:
      'Any other failure (`conflict`, `precondition_failed`, `payload_too_large`, `service_unavailable`, `internal_error`...)',
  },
};

function errorsOf(spec: RouteSpec, op: { method: Method; path: string }): [string, Json][] {
  const auth = spec.auth ?? 'operator';
  const names: string[] = [];
  if (spec.params || spec.query || spec.body || op.path.includes('{')) names.push('BadRequest');
  if (auth === 'operator' || spec.rateLimit) names.push('Unauthorized');
  if (auth === 'operator') names.push('Forbidden');
  if (op.path.includes('{') || auth === 'metrics' || spec.permission?.startsWith('app.'))
    names.push('NotFound');
  if (spec.rateLimit) names.push('RateLimited');
  names.push('Failure');
  return names.map((n) => [ERROR_RESPONSES[n]!.status, { $ref: `#/components/responses/${n}` }]);
}

function tagOf(path: string): string {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] !== 'api') return parts[0]!;
  return parts[1]!;
}

interface Parameter {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  schema: Json;
  description?: string;
}

function paramsOf(schema: z.ZodType | undefined, where: 'path' | 'query'): Parameter[] {
  if (!schema) return [];
  const js = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  const props = (js.properties ?? {}) as Record<string, Json>;
  const required = new Set((js.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    const p: Parameter = { name, in: where, required: where === 'path' || required.has(name), schema: rest };
    if (typeof description === 'string') p.description = description;
    return p;
  });
}

/** Drops per-schema `$schema`/`$id`: the document's dialect is already JSON Schema 2020-12. */
function clean(s: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = s;
  return rest;
}
