// Labels for the permission names a form offers (token scopes). Which permissions a person holds
// comes only from the server (lib/auth/roles.ts), through `GET /api/auth/me`'s `permissions`.
import type { components } from '../../client/types';

export type Permission = components['schemas']['Permission'];

export const PERMISSION_LABELS: Record<Permission, string> = {
  'self.read': 'See oneself, sessions and tokens; live events',
  'self.manage': 'Change own sign-in, sessions and tokens',
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

/** What the caller holds, from `GET /api/auth/me`'s `permissions` (none when absent). */
export function heldPermissions(me: { permissions?: unknown }): Permission[] {
  if (!Array.isArray(me.permissions)) return [];
  return ALL_PERMISSIONS.filter((p) => (me.permissions as unknown[]).includes(p));
}
