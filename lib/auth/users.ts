import type { UserTable } from '../db/schema.js';
import type { PrincipalUser } from '../http/handler.js';
import type { Role } from './roles.js';
import { operatorApps } from './access.js';

/** An operator as the API shows them: the principal's user (lib/http/handler.ts). */
export type PublicUser = PrincipalUser;

export const USERNAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
/** Long passphrases are welcome; the cap only keeps one request from hashing megabytes. */
export const PASSWORD_MAX = 1024;
export const PASSWORD_MIN = 12;

export function publicUser(
  u: Pick<UserTable, 'id' | 'username' | 'totp_enabled' | 'app_ids' | 'sso_subject'> & { role: string },
): PublicUser {
  return {
    id: u.id,
    username: u.username,
    totp_enabled: u.totp_enabled === 1,
    role: u.role,
    app_ids: operatorApps(u.role, u.app_ids),
    sso: u.sso_subject !== null,
  };
}

/** Usernames are one name without regard to case: compared by their lower case (an index holds it). */
export const usernameKey = (username: string): string => username.toLowerCase();

export interface NewOperator {
  /** Default `owner`: the first operator, made by setup. */
  role?: Role;
  /** Only for deployers and viewers; null or absent: every app. */
  appIds?: readonly string[] | null;
  ssoSubject?: string | null;
}
