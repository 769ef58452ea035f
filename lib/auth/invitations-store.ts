// Every query of invitation and reset links (`invitations`): stored by the SHA-256 of the link's
// token; invitations.ts makes, checks and redeems them.
import type { Db } from '../db/index.js';
import type { InvitationTable } from '../db/schema.js';

/** The links an operator made that nobody used yet, with the role each grants or resets. */
export function pendingLinksBy(db: Db, creatorId: string) {
  return db
    .selectFrom('invitations')
    .leftJoin('users', 'users.id', 'invitations.user_id')
    .select(['invitations.id', 'kind', 'invitations.role', 'users.role as target_role'])
    .where('created_by', '=', creatorId)
    .where('used_at', 'is', null)
    .execute();
}

export async function deleteLinks(db: Db, ids: string[]): Promise<void> {
  await db.deleteFrom('invitations').where('id', 'in', ids).execute();
}

/** Links that expired before `before` go (kept a while for the listing). */
export async function pruneLinks(db: Db, before: string): Promise<void> {
  await db.deleteFrom('invitations').where('expires_at', '<', before).execute();
}

export async function insertLinkRow(db: Db, row: InvitationTable): Promise<void> {
  await db.insertInto('invitations').values(row).execute();
}

/** An operator's unused reset links go (a new one replaces them). */
export async function dropPendingResets(db: Db, userId: string): Promise<void> {
  await db
    .deleteFrom('invitations')
    .where('kind', '=', 'reset')
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .execute();
}

/** The newest links, with the operator a reset link is for. */
export function linkRows(db: Db, limit: number) {
  return db
    .selectFrom('invitations')
    .leftJoin('users', 'users.id', 'invitations.user_id')
    .select([
      'invitations.id',
      'kind',
      'invitations.role',
      'invitations.app_ids',
      'user_id',
      'users.username',
      'users.role as user_role',
      'created_by',
      'invitations.created_at',
      'expires_at',
      'used_at',
    ])
    .orderBy('invitations.created_at', 'desc')
    .orderBy('invitations.id', 'desc')
    .limit(limit)
    .execute();
}

/** A link with the role it grants, or its operator's for a reset link. */
export function linkWithRole(db: Db, id: string) {
  return db
    .selectFrom('invitations')
    .leftJoin('users', 'users.id', 'invitations.user_id')
    .select(['invitations.id', 'kind', 'invitations.role', 'users.role as user_role'])
    .where('invitations.id', '=', id)
    .executeTakeFirst();
}

/** A link with what its creator holds now and the role of whom a reset link is for. */
export function linkGrantRow(db: Db, invitationId: string) {
  return db
    .selectFrom('invitations as i')
    .leftJoin('users as target', 'target.id', 'i.user_id')
    .leftJoin('users as creator', 'creator.id', 'i.created_by')
    .select([
      'i.kind',
      'i.role',
      'i.created_by',
      'target.role as target_role',
      'creator.role as creator_role',
      'creator.disabled as creator_disabled',
    ])
    .where('i.id', '=', invitationId)
    .executeTakeFirst();
}

/** The link whose token hashes to `hash`, with the operator a reset link is for. */
export function linkByHash(db: Db, hash: string) {
  return db
    .selectFrom('invitations')
    .leftJoin('users', 'users.id', 'invitations.user_id')
    .select([
      'invitations.id',
      'kind',
      'invitations.role',
      'user_id',
      'users.username',
      'users.role as user_role',
      'users.disabled',
      'expires_at',
      'used_at',
    ])
    .where('token_hash', '=', hash)
    .executeTakeFirst();
}

/** Marks the link used at `at` while it is unused and unexpired; false when it was not. */
export async function consumeLink(db: Db, id: string, at: string): Promise<boolean> {
  const consumed = await db
    .updateTable('invitations')
    .set({ used_at: at })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', at)
    .executeTakeFirst();
  return Number(consumed.numUpdatedRows) === 1;
}

export function linkRow(db: Db, id: string) {
  return db.selectFrom('invitations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
