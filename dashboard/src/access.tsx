// What the signed-in operator may do, for every page: `can(permission, appId?)` from
// `GET /api/auth/me` (the permissions this session holds, and the apps an operator limited to a
// list reaches). A control the operator cannot use is not shown; the API still decides.
import { createContext, type ComponentChildren } from 'preact';
import { useContext } from 'preact/hooks';
import type { Permission } from './permissions';

export interface Access {
  /** False until `GET /api/auth/me` answered: nothing is offered before. */
  known: boolean;
  permissions: ReadonlySet<string>;
  /** The apps an operator limited to a list reaches; null: every app. */
  appIds: ReadonlySet<string> | null;
}

export const NO_ACCESS: Access = { known: false, permissions: new Set(), appIds: null };

/** From `GET /api/auth/me`'s answer (`user.app_ids`, `permissions`). */
export function accessFrom(me: { user: { app_ids: string[] | null }; permissions?: unknown }): Access {
  const held = Array.isArray(me.permissions)
    ? me.permissions.filter((p): p is string => typeof p === 'string')
    : [];
  return {
    known: true,
    permissions: new Set(held),
    appIds: me.user.app_ids === null ? null : new Set(me.user.app_ids),
  };
}

/**
 * Whether `access` holds `permission`, on the app `appId` when given: an `app.*` permission of an
 * operator limited to a list of apps holds only on those.
 */
export function allowed(access: Access, permission: Permission, appId?: string): boolean {
  if (!access.permissions.has(permission)) return false;
  if (appId === undefined || !permission.startsWith('app.') || access.appIds === null) return true;
  return access.appIds.has(appId);
}

const AccessContext = createContext<Access>(NO_ACCESS);
export const AccessProvider = AccessContext.Provider;

export function useAccess(): Access {
  return useContext(AccessContext);
}

/** `const can = useCan(); can('app.deploy', app.id) && <button>…` */
export function useCan(): (permission: Permission, appId?: string) => boolean {
  const access = useAccess();
  return (permission, appId) => allowed(access, permission, appId);
}

/** Its children only for an operator who holds `permission` (on `app`, when given). */
export function Can(props: { permission: Permission; app?: string; children: ComponentChildren }) {
  return allowed(useAccess(), props.permission, props.app) ? <>{props.children}</> : null;
}
