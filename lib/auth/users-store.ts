// Every query of the operators' own rows (`users`): find, count, insert, delete, a new password.
// Usernames are compared by their lower case (migration 0022 indexes `lower(username)`).
import type { Db } from '../db/index.js';
import type { Insertable } from 'kysely';
import type { UserTable } from '../db/schema.js';
import { isUniqueViolation, nowIso } from '../db/index.js';
import { sql } from '../db/kysely.js';
import { conflict } from '../http/errors.js';
import { newId } from '../crypto/random.js';
import { invalidateCredentials } from './cache.js';
import { publicUser, usernameKey, type NewOperator, type PublicUser } from './users.js';

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

/** Notes a sign-in of an operator who is not disabled; false, and nothing written, for a disabled one. */
export async function markLogin(db: Db, userId: string, at: string): Promise<boolean> {
  const marked = await db
    .updateTable('users')
    .set({ last_login_at: at })
    .where('id', '=', userId)
    .where('disabled', '=', 0)
    .executeTakeFirst();
  return Number(marked.numUpdatedRows) === 1;
}

/** Keeps a second factor's secret (sealed) until its first code confirms it. */
export async function setTotpPending(db: Db, userId: string, sealed: string, at: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ totp_pending: sealed, updated_at: at })
    .where('id', '=', userId)
    .execute();
}

/** Whether an operator has the username whose key (lower case) is `key`. */
export async function usernameTaken(db: Db, key: string): Promise<boolean> {
  return !!(await db.selectFrom('users').select('id').where(usernameColumn, '=', key).executeTakeFirst());
}

export async function insertUserRow(db: Db, row: Insertable<UserTable>): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

/** Whom a reset link is for: their name, role and whether they are disabled. */
export function resetTarget(db: Db, userId: string) {
  return db
    .selectFrom('users')
    .select(['id', 'username', 'role', 'disabled'])
    .where('id', '=', userId)
    .executeTakeFirst();
}

/**
 * A reset: the new password, the second factor off (secret, pending secret, recovery codes) and
 * every session ended, in the caller's transaction.
 */
export async function resetCredentials(
  tx: Db,
  userId: string,
  passwordHash: string,
  at: string,
): Promise<void> {
  await tx
    .updateTable('users')
    .set({
      password_hash: passwordHash,
      totp_enabled: 0,
      totp_secret: null,
      totp_pending: null,
      totp_last_step: null,
      updated_at: at,
    })
    .where('id', '=', userId)
    .execute();
  await tx.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
  await tx.deleteFrom('sessions').where('user_id', '=', userId).execute();
}

/** The operator a single sign-on subject (`<issuer> <sub>`) signed in as. */
export function userBySubject(db: Db, subject: string) {
  return db.selectFrom('users').selectAll().where('sso_subject', '=', subject).executeTakeFirst();
}

export function idOfSubject(db: Db, subject: string) {
  return db.selectFrom('users').select('id').where('sso_subject', '=', subject).executeTakeFirst();
}

export async function setLastLogin(db: Db, userId: string, at: string): Promise<void> {
  await db.updateTable('users').set({ last_login_at: at }).where('id', '=', userId).execute();
}

/** Whether an enabled owner other than this operator exists. */
export async function otherEnabledOwner(db: Db, userId: string): Promise<boolean> {
  const others = await db
    .selectFrom('users')
    .select('id')
    .where('role', '=', 'owner')
    .where('disabled', '=', 0)
    .where('id', '!=', userId)
    .executeTakeFirst();
  return !!others;
}

export async function setRole(db: Db, userId: string, role: string, at: string): Promise<void> {
  await db.updateTable('users').set({ role, updated_at: at }).where('id', '=', userId).execute();
}

/** Usernames whose key is `key` or starts with `key-`. */
export async function usernamesLike(db: Db, key: string): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select('username')
    // `_` in a name matches any character here: a few names too many are treated as taken, which is harmless.
    .where((eb) => eb.or([eb(usernameColumn, '=', key), eb(usernameColumn, 'like', `${key}-%`)]))
    .execute();
  return rows.map((r) => r.username);
}
