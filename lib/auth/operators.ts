// Operators as the people pages see them: list, change role, apps and the disabled flag, delete.
// Owner rules (only an owner touches owners; the last enabled owner stays) are checked and written
// in one transaction, so two concurrent requests cannot both remove the last owners.
import type { Db } from '../db/index.js';
import type { UserTable } from '../db/schema.js';
import { nowIso } from '../db/index.js';
import { existingAppIds } from '../apps/store.js';
import { findUser } from './users-store.js';
import { deleteLinks, pendingLinksBy } from './invitations-store.js';
import {
  actorRow,
  allUserRows,
  deleteOperatorRow,
  enabledOwners,
  endAccess,
  writeOperator,
} from './operators-store.js';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../http/errors.js';
import { invalidateCredentials } from './cache.js';
import { APP_LIMITED_ROLES, ROLE_PERMISSIONS, isRole, type Permission, type Role } from './roles.js';

export interface OperatorView {
  id: string;
  username: string;
  role: Role;
  app_ids: string[] | null;
  totp_enabled: boolean;
  disabled: boolean;
  sso: boolean;
  created_at: string;
  last_login_at: string | null;
}

type UserRow = Pick<
  UserTable,
  'id' | 'username' | 'totp_enabled' | 'app_ids' | 'sso_subject' | 'created_at' | 'last_login_at'
> & { role: string; disabled: number };

export function parseAppIds(raw: string | null): string[] | null {
  if (raw === null) return null;
  const v = JSON.parse(raw) as unknown;
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : null;
}

export function operatorView(u: UserRow): OperatorView {
  return {
    id: u.id,
    username: u.username,
    role: isRole(u.role) ? u.role : 'viewer',
    app_ids: parseAppIds(u.app_ids),
    totp_enabled: u.totp_enabled === 1,
    disabled: u.disabled === 1,
    sso: u.sso_subject !== null,
    created_at: u.created_at,
    last_login_at: u.last_login_at,
  };
}

export async function listOperators(db: Db): Promise<OperatorView[]> {
  const rows = await allUserRows(db);
  return rows.map(operatorView);
}

export async function getOperator(db: Db, id: string): Promise<OperatorView | null> {
  const row = await findUser(db, id);
  return row ? operatorView(row) : null;
}

/**
 * Who changes operators: an operator (their role read now, not from a cached credential) or the
 * host itself (`svc` on the host, null), which may do anything.
 */
export type Actor = { id: string; role: Role } | null;

export async function actingOperator(db: Db, userId: string): Promise<NonNullable<Actor>> {
  const row = await actorRow(db, userId);
  if (!row || row.disabled === 1 || !isRole(row.role)) throw unauthorized();
  return { id: row.id, role: row.role };
}

export const can = (actor: Actor, permission: Permission): boolean =>
  actor === null || ROLE_PERMISSIONS[actor.role].has(permission);

const ownersOnly = () => forbidden('Only an owner grants, changes or removes the owner role');

/** 403 unless the actor may act on an operator (or invitation) of `role`. */
export function requireManage(actor: Actor, ...roles: Array<Role | null>): void {
  if (!can(actor, 'operators.manage'))
    throw forbidden('Managing operators needs the operators.manage permission');
  if (roles.includes('owner') && !can(actor, 'owners.manage')) throw ownersOnly();
}

/** Whether the actor may make a link of this kind for this role (a reset link: an owner's tool only). */
export function mayGrantLink(
  actor: NonNullable<Actor>,
  kind: 'invite' | 'reset',
  role: string | null,
): boolean {
  if (kind === 'reset') return can(actor, 'owners.manage');
  if (!can(actor, 'operators.manage')) return false;
  return role !== 'owner' || can(actor, 'owners.manage');
}

/**
 * Deletes the pending links an operator made that they could no longer make (`now`: null when
 * they are disabled or deleted, else their new role), in the caller's transaction. A link never
 * grants more than its creator can grant at redemption time: this withdraws it at once, and the
 * accept checks again.
 */
async function withdrawLinksOf(db: Db, creatorId: string, now: Role | null): Promise<void> {
  const pending = await pendingLinksBy(db, creatorId);
  const actor = now === null ? null : { id: creatorId, role: now };
  const gone = pending
    .filter(
      (p) => actor === null || !mayGrantLink(actor, p.kind, p.kind === 'reset' ? p.target_role : p.role),
    )
    .map((p) => p.id);
  if (gone.length) await deleteLinks(db, gone);
}

/**
 * The app list a role may carry: null (every app) for anyone; a list only for deployers and viewers,
 * each id an existing app. Answers the list deduplicated.
 */
export async function checkAppIds(
  db: Db,
  role: Role,
  appIds: readonly string[] | null,
): Promise<string[] | null> {
  if (appIds === null) return null;
  if (!APP_LIMITED_ROLES.has(role)) {
    throw badRequest(`app_ids limits deployers and viewers only; a ${role} reaches every app`, [
      { field: 'app_ids', message: 'must be null or absent for this role' },
    ]);
  }
  const unique = [...new Set(appIds)];
  if (unique.length === 0) return [];
  const found = new Set(await existingAppIds(db, unique));
  const missing = unique.filter((id) => !found.has(id));
  if (missing.length)
    throw badRequest(
      'app_ids names apps that do not exist',
      missing.map((id) => ({ field: 'app_ids', message: `no app ${id.slice(0, 64)}` })),
    );
  return unique;
}

const lastOwner = () => conflict('This is the last enabled owner: make another operator an owner first');

export interface OperatorPatch {
  role?: Role;
  app_ids?: string[] | null;
  disabled?: boolean;
}

export async function updateOperator(
  db: Db,
  actor: Actor,
  id: string,
  patch: OperatorPatch,
  now = Date.now(),
): Promise<{ before: OperatorView; after: OperatorView }> {
  const result = await db.transaction().execute(async (tx) => {
    const row = await findUser(tx, id);
    if (!row) throw notFound('No such operator');
    const before = operatorView(row);
    const role = patch.role ?? before.role;
    requireManage(actor, before.role, role);
    let appIds = before.app_ids;
    if (patch.app_ids !== undefined) appIds = await checkAppIds(tx, role, patch.app_ids);
    // An admin or owner reaches every app: a list kept from a narrower role would mean nothing.
    else if (!APP_LIMITED_ROLES.has(role)) appIds = null;
    const disabled = patch.disabled ?? before.disabled;
    const wasOwner = before.role === 'owner' && !before.disabled;
    if (wasOwner && (role !== 'owner' || disabled) && (await enabledOwners(tx)) <= 1) throw lastOwner();
    await writeOperator(tx, id, {
      role,
      app_ids: appIds === null ? null : JSON.stringify(appIds),
      disabled: disabled ? 1 : 0,
      updated_at: nowIso(now),
    });
    if (disabled && !before.disabled) await endAccess(tx, id, now);
    if (disabled || role !== before.role) await withdrawLinksOf(tx, id, disabled ? null : role);
    return { before, after: { ...before, role, app_ids: appIds, disabled } };
  });
  // Narrowed or disabled: cached credentials and open sockets are checked again at once.
  invalidateCredentials();
  return result;
}

/** Deletes an operator (sessions, tokens and reset links go with them) and answers what they were. */
export async function removeOperator(db: Db, actor: Actor, id: string): Promise<OperatorView> {
  const removed = await db.transaction().execute(async (tx) => {
    const row = await findUser(tx, id);
    if (!row) throw notFound('No such operator');
    const view = operatorView(row);
    requireManage(actor, view.role);
    if (view.role === 'owner' && !view.disabled && (await enabledOwners(tx)) <= 1) throw lastOwner();
    await deleteOperatorRow(tx, id);
    await withdrawLinksOf(tx, id, null);
    return view;
  });
  invalidateCredentials();
  return removed;
}
