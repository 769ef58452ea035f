// Every query of the operators list beyond one user's row (users-store.ts): the listings, role and
// app changes, disabling, removal, and the host's break-glass commands.
import type { Db } from '../db/index.js';
import { lockedOn, nowIso } from '../db/index.js';
import { usernameColumn } from './users-store.js';
import { clearTotp } from './totp-store.js';

/** Every operator, by username, with what the host's listing shows. */
export function operatorRows(db: Db) {
  return db
    .selectFrom('users')
    .select([
      'id',
      'username',
      'role',
      'app_ids',
      'disabled',
      'totp_enabled',
      'sso_subject',
      'created_at',
      'last_login_at',
    ])
    .orderBy('username')
    .execute();
}

/** Every app's id and name. */
export function appNames(db: Db) {
  return db.selectFrom('apps').select(['id', 'name']).execute();
}

/**
 * Turns off the second factor of the operator whose username's key is `key` and ends their
 * sessions, in one transaction; null when there is no such operator.
 */
export async function dropSecondFactor(
  db: Db,
  key: string,
  at: string,
): Promise<{ id: string; sessions: number; hadTotp: boolean } | null> {
  return db.transaction().execute(async (tx) => {
    const user = await tx
      .selectFrom('users')
      .select(['id', 'totp_enabled', 'totp_pending'])
      .where(usernameColumn, '=', key)
      .executeTakeFirst();
    if (!user) return null;
    await clearTotp(tx, user.id, at);
    const s = await tx.deleteFrom('sessions').where('user_id', '=', user.id).executeTakeFirst();
    return {
      id: user.id,
      sessions: Number(s.numDeletedRows),
      hadTotp: user.totp_enabled === 1 || user.totp_pending !== null,
    };
  });
}

/** Locks the enabled owners' rows (PostgreSQL): two removals at once cannot both see a second owner. */
export async function enabledOwners(db: Db): Promise<number> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('role', '=', 'owner')
    .where('disabled', '=', 0)
    .$call(lockedOn(db))
    .execute();
  return rows.length;
}

/** Every session of the operator ends and every token is revoked (the caller invalidates the caches). */
export async function endAccess(db: Db, userId: string, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
  await db
    .updateTable('api_tokens')
    .set({ revoked_at: nowIso(now) })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Every operator's row, oldest first. */
export function allUserRows(db: Db) {
  return db.selectFrom('users').selectAll().orderBy('created_at').orderBy('id').execute();
}

/** What decides whether an operator may act: their role and whether they are disabled. */
export function actorRow(db: Db, userId: string) {
  return db
    .selectFrom('users')
    .select(['id', 'role', 'disabled'])
    .where('id', '=', userId)
    .executeTakeFirst();
}

export async function writeOperator(
  db: Db,
  id: string,
  set: { role: string; app_ids: string | null; disabled: number; updated_at: string },
): Promise<void> {
  await db.updateTable('users').set(set).where('id', '=', id).execute();
}

/** The operator's row goes; sessions, tokens and reset links go with it (cascade). */
export async function deleteOperatorRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute();
}
