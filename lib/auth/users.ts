import type { Db } from '../db/index.js';
import type { UserTable } from '../db/schema.js';
import { isUniqueViolation, nowIso } from '../db/index.js';
import { sql } from '../db/kysely.js';
import { conflict } from '../http/errors.js';
import { newId } from '../crypto/random.js';
import { invalidateCredentials } from './cache.js';
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

/** `lower(username)`, the indexed form (migration 0022), for where clauses. */
export const usernameColumn = sql<string>`lower(username)`;

export function findUserByName(db: Db, username: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where(usernameColumn, '=', usernameKey(username))
    .executeTakeFirst();
}

export function findUser(db: Db, id: string) {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countUsers(db: Db): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export interface NewOperator {
  /** Default `owner`: the first operator, made by setup. */
  role?: Role;
  /** Only for deployers and viewers; null or absent: every app. */
  appIds?: readonly string[] | null;
  ssoSubject?: string | null;
}

export async function insertUser(
  db: Db,
  username: string,
  passwordHash: string,
  opts: NewOperator = {},
): Promise<PublicUser> {
  const now = nowIso();
  const row = {
    id: newId(),
    username,
    password_hash: passwordHash,
    totp_enabled: 0,
    totp_secret: null,
    totp_pending: null,
    totp_last_step: null,
    created_at: now,
    updated_at: now,
    role: opts.role ?? 'owner',
    app_ids: opts.appIds == null ? null : JSON.stringify(opts.appIds),
    sso_subject: opts.ssoSubject ?? null,
  };
  try {
    await db.insertInto('users').values(row).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict('That username is taken');
    throw e;
  }
  return publicUser(row);
}

/** Removes an operator with every session and token (cascade); open connections close at once. */
export async function deleteUser(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
  invalidateCredentials();
  return Number(r.numDeletedRows) > 0;
}

/**
 * A new password ends every session of the operator except `keepSessionId` (the one that changed
 * it, if any): whoever knew the old password is logged out, WebSockets included.
 */
export async function setPassword(
  db: Db,
  id: string,
  passwordHash: string,
  keepSessionId: string | null = null,
  now = Date.now(),
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx
      .updateTable('users')
      .set({ password_hash: passwordHash, updated_at: nowIso(now) })
      .where('id', '=', id)
      .execute();
    let q = tx.deleteFrom('sessions').where('user_id', '=', id);
    if (keepSessionId) q = q.where('id', '!=', keepSessionId);
    await q.execute();
  });
  invalidateCredentials();
}
