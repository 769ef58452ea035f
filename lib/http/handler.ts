import type { z } from 'zod';
import type { Env } from '../env.js';
import type { PublicUser } from '../auth/users.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `operator` (default): an authenticated operator; `public`: anyone; `metrics`: SVC_METRICS_TOKEN. */
export type AuthPolicy = 'operator' | 'public' | 'metrics';

export interface Principal {
  kind: 'session' | 'token';
  user: PublicUser;
  /** Session id or API token id: step-up is bound to it. */
  credentialId: string;
  stepUpUntil: string | null;
  /** Raw session value, kept only to derive its CSRF token and to log it out. */
  rawSession?: string;
}

export interface Client {
  ip: string;
  /** TLS to us, or `X-Forwarded-Proto: https` from a trusted proxy: cookies get `Secure`. */
  secure: boolean;
  userAgent: string | null;
}

export interface AuditNote {
  action?: string;
  target?: string;
  detail?: Record<string, unknown>;
}

export interface Ctx<P = Record<string, string>, B = unknown, Q = Record<string, unknown>> {
  params: P;
  query: Q;
  body: B;
  env: Env;
  principal: Principal | null;
  client: Client;
  requestId: string;
  waitUntil(p: Promise<unknown>): void;
  /** Refines the audit entry the runtime writes for this request (never pass secrets). */
  audit(note: AuditNote): void;
}

export type Handler<P = any, B = any, Q = any> = (request: Request, ctx: Ctx<P, B, Q>) => Response | Promise<Response>;

export interface RouteSchema {
  params?: z.ZodType;
  query?: z.ZodType;
  body?: Partial<Record<Method, z.ZodType>>;
}

/** What a handler file may export. */
export interface HandlerModule {
  GET?: Handler;
  POST?: Handler;
  PUT?: Handler;
  PATCH?: Handler;
  DELETE?: Handler;
  auth?: AuthPolicy | Partial<Record<Method, AuthPolicy>>;
  stepUp?: readonly Method[];
  /** Methods rate-limited per client address (login, TOTP, step-up, setup). */
  rateLimit?: readonly Method[];
  schema?: RouteSchema;
}
