// The names of the operator roles, highest first. They live here, apart from what each role may
// do (lib/auth/roles.ts), because configuration checks SVC_OIDC_ROLE_MAP against them at boot and
// configuration knows no product area.
export const ROLES = ['owner', 'admin', 'deployer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const isRole = (v: unknown): v is Role =>
  typeof v === 'string' && (ROLES as readonly string[]).includes(v);
