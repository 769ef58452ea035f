// Roles as named permissions: the one table that decides what an operator (and, within that, an
// API token) may do. Routes declare the permission they need next to their schemas (`permission`
// in lib/http/route.ts); the dispatcher decides with this table, and OpenAPI shows it.

import { ROLES, isRole, type Role } from '../util/role-names.js';
export { ROLES, isRole, type Role };

/** Every permission, with the sentence the API documentation shows for it. */
export const PERMISSIONS = {
  'self.read': "See who one is, one's sessions and tokens, the API description and live events; step up",
  'self.manage': "Change one's own password, second factor, recovery codes, sessions and API tokens",
  'app.read':
    'Read apps, services, deployments, logs, metrics, domains, databases, backups, jobs and runs (no secret value, no download)',
  'app.deploy':
    'Deploy, roll back and cancel; start, stop and restart services; manage and run jobs, run one-off commands',
  'app.env': 'Write environment variables and reveal their values',
  'app.triggers': 'Manage deploy triggers and the webhook secret',
  'app.backup': 'Run a backup now',
  'app.shell': 'Open a shell in a container (when the shell is enabled)',
  'app.admin':
    'Create, configure and delete apps, their domains, databases and backup settings; download backups',
  'instance.read':
    'Read the audit log (and revert what one may do again), security findings, host vitals and instance settings',
  'instance.admin': 'Change instance settings, notification channels and instance backups; restart and prune',
  'operators.manage': 'Invite and manage operators who are not owners',
  'owners.manage': 'Invite, change and remove owners',
  'instance.owner': 'Reset the instance; set the base and control domains',
} as const;
export type Permission = keyof typeof PERMISSIONS;

declare module '../http/handler.js' {
  interface PermissionNames extends Record<Permission, true> {}
}
export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];

/** Permissions that act on one app: an operator or token limited to a list of apps holds them only there. */
export const APP_PERMISSIONS: ReadonlySet<Permission> = new Set(
  PERMISSION_NAMES.filter((p) => p.startsWith('app.')),
);

const VIEWER: readonly Permission[] = ['self.read', 'self.manage', 'app.read', 'instance.read'];
const DEPLOYER: readonly Permission[] = [
  ...VIEWER,
  'app.deploy',
  'app.env',
  'app.triggers',
  'app.backup',
  'app.shell',
];
const ADMIN: readonly Permission[] = [...DEPLOYER, 'app.admin', 'instance.admin', 'operators.manage'];
const OWNER: readonly Permission[] = [...ADMIN, 'owners.manage', 'instance.owner'];

export const ROLE_PERMISSIONS: Readonly<Record<Role, ReadonlySet<Permission>>> = {
  viewer: new Set(VIEWER),
  deployer: new Set(DEPLOYER),
  admin: new Set(ADMIN),
  owner: new Set(OWNER),
};

/**
 * What every API token holds whatever its scopes (within its owner's role): knowing who it acts
 * for and stepping up. Changing its owner's sign-in or tokens needs `self.manage` in its scopes.
 */
export const TOKEN_IMPLICIT: readonly Permission[] = ['self.read'];

/**
 * Permissions over the whole instance and its people: a credential limited to a list of apps (a
 * deployer's or viewer's, or an admin's token limited to apps) never holds them.
 */
export const INSTANCE_WRITES: readonly Permission[] = [
  'instance.admin',
  'operators.manage',
  'owners.manage',
  'instance.owner',
];

/** Roles whose holders may be limited to a list of apps (`app_ids`); admins and owners see every app. */
export const APP_LIMITED_ROLES: ReadonlySet<Role> = new Set(['deployer', 'viewer']);

export const isPermission = (v: unknown): v is Permission =>
  typeof v === 'string' && Object.hasOwn(PERMISSIONS, v);
