// What a credential may do, computed from the operator's row (and the token's) at each lookup:
// the role's permissions from lib/auth/roles.ts, narrowed by a token's scopes and app list. The
// row is read fresh after every invalidateCredentials(), so a changed role or app list, or a
// disabled operator, takes effect on the next request.
import type { Principal } from '../http/handler.js';
import { HttpError, notFound } from '../http/errors.js';
import {
  APP_LIMITED_ROLES,
  APP_PERMISSIONS,
  INSTANCE_WRITES,
  ROLE_PERMISSIONS,
  TOKEN_IMPLICIT,
  isPermission,
  isRole,
  type Permission,
} from './roles.js';

export interface Access {
  permissions: ReadonlySet<Permission>;
  appIds: ReadonlySet<string> | null;
}

const NOTHING: Access = { permissions: new Set(), appIds: new Set() };

function jsonList(text: string | null | undefined): string[] | null {
  if (text == null) return null;
  try {
    const v = JSON.parse(text) as unknown;
    // A list that is not one reaches nothing rather than everything.
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** The apps an operator of this role reaches: admins and owners every app, whatever the row says. */
export function operatorApps(role: string, appIds: string | null): string[] | null {
  return isRole(role) && APP_LIMITED_ROLES.has(role) ? jsonList(appIds) : null;
}

// Few distinct combinations exist: computed once each, not per request.
const memo = new Map<string, Access>();
const MEMO_MAX = 512;

/**
 * `token` absent: a session, with the role's permissions and the operator's apps. Present: its
 * scopes (null: all) intersected with the role's permissions, its apps with the operator's.
 */
export function accessOf(
  role: string,
  userApps: string | null,
  token?: { scopes: string | null; app_ids: string | null },
): Access {
  const key = `${role}\u0000${userApps}\u0000${token ? `${token.scopes}\u0000${token.app_ids}` : '-'}`;
  const hit = memo.get(key);
  if (hit) return hit;
  if (!isRole(role)) return NOTHING;
  const granted = ROLE_PERMISSIONS[role];
  let permissions: Set<Permission> = new Set(granted);
  const scopes = token ? jsonList(token.scopes) : null;
  if (scopes !== null)
    permissions = new Set([...scopes.filter(isPermission), ...TOKEN_IMPLICIT].filter((p) => granted.has(p)));
  const own = operatorApps(role, userApps);
  const narrowed = token ? jsonList(token.app_ids) : null;
  const apps = own === null ? narrowed : narrowed === null ? own : own.filter((a) => narrowed.includes(a));
  // A credential limited to apps acts on those apps only: what changes the instance or its people is outside them.
  if (apps !== null) for (const p of INSTANCE_WRITES) permissions.delete(p);
  const access: Access = { permissions, appIds: apps === null ? null : new Set(apps) };
  if (memo.size >= MEMO_MAX) memo.delete(memo.keys().next().value!);
  memo.set(key, access);
  return access;
}

/** Whether the principal reaches this app at all (its list, whatever the permission). */
export function reachesApp(principal: Pick<Principal, 'appIds'>, appId: string): boolean {
  return principal.appIds === null || principal.appIds.has(appId);
}

/** Keeps the items whose app the principal reaches (listings: an app outside the list is absent). */
export function visible<T>(
  principal: Pick<Principal, 'appIds'> | null,
  items: readonly T[],
  appOf: (item: T) => string | null | undefined,
): T[] {
  if (principal === null || principal.appIds === null) return [...items];
  const apps = principal.appIds;
  return items.filter((i) => {
    const a = appOf(i);
    return a == null || apps.has(a);
  });
}

/**
 * The one decision: 403 without the permission; 404 when the request names an app outside the
 * principal's list, so its existence is not revealed (`app.*` permissions reach only those apps,
 * and what is about another app, an audit entry, is as absent). `appId` undefined: none named.
 */
export function permit(
  principal: Pick<Principal, 'permissions' | 'appIds'>,
  permission: Permission | undefined,
  appId?: string | null,
): void {
  if (permission === undefined)
    throw new HttpError('forbidden', 'This route declares no permission: nobody may call it');
  if (!principal.permissions.has(permission))
    throw new HttpError(
      'forbidden',
      `This needs the "${permission}" permission, which your role or token does not have`,
    );
  if (appId != null && !reachesApp(principal, appId)) throw notFound('No such app');
  // null: what is acted on belongs to no app (a new app, a redirect). Outside every list, so a
  // limited caller may read it (listings keep it) but not change it.
  if (
    appId === null &&
    principal.appIds !== null &&
    isAppPermission(permission) &&
    permission !== 'app.read'
  ) {
    throw new HttpError(
      'forbidden',
      'You are limited to some apps: this changes something that belongs to none of them',
    );
  }
}

/** Whether this permission is held only on the apps of the caller's list. */
export const isAppPermission = (p: Permission): boolean => APP_PERMISSIONS.has(p);

/** Whether the principal may do this (no throw), for filters and WebSocket topics. */
export function allows(
  principal: Pick<Principal, 'permissions' | 'appIds'>,
  permission: Permission,
  appId?: string | null,
): boolean {
  try {
    permit(principal, permission, appId);
    return true;
  } catch {
    return false;
  }
}
