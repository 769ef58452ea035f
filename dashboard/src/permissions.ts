// The permission names a role holds, for forms that offer them (token scopes). The server's table
// (lib/auth/roles.ts, shown in OpenAPI as `x-permission`) decides; this copy only chooses what to
// offer when `GET /api/auth/me` does not list the caller's permissions. Offering one too many is
// harmless: the server answers 400 naming it.
import type { components } from '../../client/types';

export type Permission = components['schemas']['Permission'];

export const PERMISSION_LABELS: Record<Permission, string> = {
  'app.read': 'Read apps',
  'app.deploy': 'Deploy and control services',
  'app.env': 'Write and reveal environment variables',
  'app.triggers': 'Manage deploy triggers',
  'app.backup': 'Run backups',
  'app.shell': 'Open a shell',
  'app.admin': 'Create, configure and delete apps',
  'instance.read': 'Read the instance (audit, security, vitals)',
  'instance.admin': 'Change instance settings',
  'operators.manage': 'Manage operators',
  'owners.manage': 'Manage owners',
  'instance.owner': 'Reset the instance, set its domains',
};

export const ALL_PERMISSIONS = Object.keys(PERMISSION_LABELS) as Permission[];

const VIEWER: Permission[] = ['app.read', 'instance.read'];
const DEPLOYER: Permission[] = [...VIEWER, 'app.deploy', 'app.env', 'app.triggers', 'app.backup', 'app.shell'];
const ADMIN: Permission[] = [...DEPLOYER, 'app.admin', 'instance.admin', 'operators.manage'];
const ROLE_PERMISSIONS: Record<string, Permission[]> = { viewer: VIEWER, deployer: DEPLOYER, admin: ADMIN, owner: ALL_PERMISSIONS };

/** What the caller holds, from `GET /api/auth/me`: its `permissions` if listed, else its role's, else all. */
export function heldPermissions(me: { permissions?: unknown; user?: { role?: unknown } }): Permission[] {
  if (Array.isArray(me.permissions)) return ALL_PERMISSIONS.filter((p) => (me.permissions as unknown[]).includes(p));
  const role = me.user?.role;
  return (typeof role === 'string' && ROLE_PERMISSIONS[role]) || ALL_PERMISSIONS;
}
