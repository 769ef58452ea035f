// The handler contract. http/ is infrastructure and names no product area: each area registers
// the service it provides into `Services` beside its own code (declaration merging), so this file
// types `ctx.env` without importing what the services are, and an area that takes the services
// imports them from here, not from a list that names every area. runtime/boot.ts builds them.

/**
 * The services handed to every handler as `ctx.env`. Each area adds its own, e.g. lib/deploy/types.ts:
 * `declare module '../http/handler.js' { interface Services { deployments: Deployments } }`.
 * Tests and other hosts build their own.
 */
export interface Services {
  /** Drains and restarts the process; set by the host that can (`svc serve`), absent elsewhere. */
  requestRestart?: () => void;
  now: () => number;
}

/** The permission names, registered by lib/auth/roles.ts (the same declaration merging as Services). */
export interface PermissionNames {}
export type PermissionName = keyof PermissionNames & string;

/** Who an authenticated request acts as (lib/auth/users.ts names it PublicUser). */
export interface PrincipalUser {
  id: string;
  username: string;
  totp_enabled: boolean;
  /** `owner`, `admin`, `deployer` or `viewer` (lib/auth/roles.ts). */
  role: string;
  /** The apps a deployer or viewer is limited to; null: every app. */
  app_ids: string[] | null;
  /** Signs in with the identity provider (no password): step-up is a fresh sign-in there. */
  sso: boolean;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `operator` (default): an authenticated operator; `public`: anyone; `metrics`: SVC_METRICS_TOKEN. */
export type AuthPolicy = 'operator' | 'public' | 'metrics';

export interface Principal {
  kind: 'session' | 'token';
  user: PrincipalUser;
  /** Session id or API token id: step-up is bound to it. */
  credentialId: string;
  stepUpUntil: string | null;
  /** Raw session value, kept only to derive its CSRF token and to log it out. */
  rawSession?: string;
  /** What this request may do: the role's permissions, for a token intersected with its scopes. */
  permissions: ReadonlySet<PermissionName>;
  /**
   * The apps its `app.*` permissions reach (null: every app): the operator's list, for a token
   * intersected with the token's own.
   */
  appIds: ReadonlySet<string> | null;
}

export interface Client {
  ip: string;
  /** TLS to us, or `X-Forwarded-Proto: https` from a trusted proxy: cookies get `Secure`. */
  secure: boolean;
  userAgent: string | null;
}

export interface AuditNote {
  action?: string;
  target?: string | null;
  detail?: Record<string, unknown>;
  /** Who acted, on a public route that learns it (login, setup): the principal otherwise. */
  actor?: { id: string; username: string };
  /** The username a refused sign-in claimed (no operator is known): shown as the actor's name. */
  claimed?: string;
  /** How they authenticated (`password`, `totp`, `setup`...): the principal's kind otherwise. */
  via?: string;
  /** This outcome is not an event worth a row (a login that still waits for its second factor). */
  skip?: boolean;
  /** The state target's id when the handler changed it (a re-created target). */
  stateId?: string;
  /** This request reverts that audit entry (POST /api/audit/{id}/revert). */
  revertOf?: number;
  /** The app the change concerns, when the route's path does not say (a revert: the reverted entry's). */
  appId?: string | null;
  /** Answers with the id of the entry the stage writes (the revert names its own entry). */
  answer?: (auditId: string) => Response;
}

export interface Ctx<P = Record<string, string>, B = unknown, Q = Record<string, unknown>> {
  params: P;
  query: Q;
  body: B;
  env: Services;
  principal: Principal | null;
  client: Client;
  requestId: string;
  waitUntil(p: Promise<unknown>): void;
  /** Refines the audit entry the runtime writes for this request (never pass secrets). */
  audit(note: AuditNote): void;
  /** Throws 403 step_up_required unless the operator stepped up recently (an effect that needs it). */
  requireStepUp(): void;
  /**
   * Throws 403 forbidden without the permission, 404 not_found when `appId` is outside the caller's
   * apps (lib/auth/access.ts): for an effect another route's declaration governs (a revert).
   */
  permit(permission: PermissionName | undefined, appId?: string | null): void;
  /**
   * The declaration of the route an audit action names (`<METHOD> <pattern>`, OpenAPI form), or
   * null: a revert replays that route's policy.
   */
  routeSpec(action: string): Promise<RouteSpecPolicy | null>;
}

/** What a route declares about who may call it (lib/http/route.ts RouteSpec). */
export interface RouteSpecPolicy {
  stepUp?: boolean;
  stepUpWhen?: string;
  sessionOnly?: boolean;
  permission?: PermissionName;
}
