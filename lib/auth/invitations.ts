// Invitations and reset links: a single-use random token in a URL, shown once, stored as its
// SHA-256 only (a database leak hands out no usable link). A token is found through its hash, so
// no secret is ever compared byte by byte. Accepting consumes the row with one conditional UPDATE
// inside the transaction that creates the operator (or sets the password): two concurrent accepts
// cannot both succeed, and a refused accept (username taken) leaves the link usable.
import type { Db } from '../db/index.js';
import type { Config } from '../config.js';
import type { InvitationTable } from '../db/schema.js';
import { isUniqueViolation, nowIso } from '../db/index.js';
import { newId, randomToken, sha256Hex } from '../crypto/random.js';
import { badRequest, conflict, forbidden, notFound } from '../http/errors.js';
import { effectiveControlDomain } from '../proxy/config.js';
import { getBaseDomain } from '../domains/store.js';
import { invalidateCredentials } from './cache.js';
import { usernameKey } from './users.js';
import { insertUserRow, resetCredentials, resetTarget, usernameTaken } from './users-store.js';
import { existingAppIds } from '../apps/store.js';
import {
  consumeLink,
  deleteLinks,
  dropPendingResets,
  insertLinkRow,
  linkByHash,
  linkGrantRow,
  linkRow,
  linkRows,
  linkWithRole,
  pruneLinks,
} from './invitations-store.js';
import { can, checkAppIds, mayGrantLink, parseAppIds, requireManage, type Actor } from './operators.js';
import { isRole, type Role } from './roles.js';

export const INVITE_HOURS_DEFAULT = 48;
export const INVITE_HOURS_MAX = 168;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Used and expired rows are kept this long (the list shows what became of them), then dropped. */
const KEEP_MS = 30 * 86_400_000;
const LIST_MAX = 200;

export type InvitationKind = InvitationTable['kind'];

export interface InvitationView {
  id: string;
  kind: InvitationKind;
  role: Role | null;
  app_ids: string[] | null;
  /** A reset link: the operator whose password it sets. */
  user_id: string | null;
  username: string | null;
  created_by: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  status: 'pending' | 'used' | 'expired';
}

export interface CreatedInvitation {
  id: string;
  kind: InvitationKind;
  role: Role | null;
  app_ids: string[] | null;
  expires_at: string;
  url: string;
}

/**
 * Where a person opens the link: SVC_PUBLIC_URL, else the control domain over HTTPS, else no
 * origin at all (the link is then a path, which the dashboard shows under its own address). Never
 * the request's Host header: whoever can send the request through a proxy that passes any Host
 * could otherwise point the link, and the token in it, at a site of theirs.
 */
export async function publicBase(
  db: Db,
  config: Pick<Config, 'publicUrl' | 'baseDomain' | 'proxy'>,
): Promise<string | null> {
  if (config.publicUrl) return config.publicUrl;
  const control = effectiveControlDomain(
    config.proxy.controlDomain,
    await getBaseDomain(db, config.baseDomain),
  );
  return control ? `https://${control}` : null;
}

export const invitationUrl = (base: string | null, token: string) => `${base ?? ''}/invite/${token}`;

async function insertLink(
  db: Db,
  row: Omit<InvitationTable, 'id' | 'token_hash' | 'created_at' | 'expires_at' | 'used_at'>,
  hours: number,
  base: string | null,
  now: number,
): Promise<CreatedInvitation> {
  if (!Number.isInteger(hours) || hours < 1 || hours > INVITE_HOURS_MAX)
    throw badRequest(`expires_in_hours is 1..${INVITE_HOURS_MAX}`, [
      { field: 'expires_in_hours', message: 'out of range' },
    ]);
  const token = randomToken(32);
  const id = newId(now);
  const expires_at = nowIso(now + hours * 3_600_000);
  await pruneLinks(db, nowIso(now - KEEP_MS));
  await insertLinkRow(db, {
    ...row,
    id,
    token_hash: sha256Hex(token),
    created_at: nowIso(now),
    expires_at,
    used_at: null,
  });
  return {
    id,
    kind: row.kind,
    role: isRole(row.role) ? row.role : null,
    app_ids: parseAppIds(row.app_ids),
    expires_at,
    url: invitationUrl(base, token),
  };
}

export interface InviteInput {
  role: Role;
  app_ids?: string[] | null;
  expires_in_hours?: number;
}

/** A link that creates an operator of `role` (an admin invites every role but owner). */
export async function createInvitation(
  db: Db,
  actor: Actor,
  createdBy: string | null,
  input: InviteInput,
  base: string | null,
  now = Date.now(),
): Promise<CreatedInvitation> {
  requireManage(actor, input.role);
  const appIds = await checkAppIds(db, input.role, input.app_ids ?? null);
  const row = {
    kind: 'invite' as const,
    role: input.role,
    app_ids: appIds === null ? null : JSON.stringify(appIds),
    user_id: null,
    created_by: createdBy,
  };
  return insertLink(db, row, input.expires_in_hours ?? INVITE_HOURS_DEFAULT, base, now);
}

/**
 * A link that sets a new password for an operator and clears their TOTP (the host's CLI calls it
 * too, with a null actor). Earlier reset links of that operator stop working.
 */
export async function createResetLink(
  db: Db,
  actor: Actor,
  userId: string,
  createdBy: string | null,
  base: string | null,
  opts: { hours?: number; now?: number } = {},
): Promise<CreatedInvitation & { username: string }> {
  const now = opts.now ?? Date.now();
  const user = await resetTarget(db, userId);
  if (!user) throw notFound('No such operator');
  // A reset takes over an account (password and second factor): an owner's tool only.
  if (!can(actor, 'owners.manage')) throw forbidden('Only an owner sends reset links');
  if (user.disabled === 1)
    throw conflict('This operator is disabled: enable them before sending a reset link');
  const created = await db.transaction().execute(async (tx) => {
    await dropPendingResets(tx, userId);
    return insertLink(
      tx,
      { kind: 'reset', role: null, app_ids: null, user_id: userId, created_by: createdBy },
      opts.hours ?? INVITE_HOURS_DEFAULT,
      base,
      now,
    );
  });
  return { ...created, role: isRole(user.role) ? user.role : null, username: user.username };
}

export async function listInvitations(db: Db, now = Date.now()): Promise<InvitationView[]> {
  const rows = await linkRows(db, LIST_MAX);
  const at = nowIso(now);
  return rows.map((r) => {
    const role = r.kind === 'reset' ? r.user_role : r.role;
    return {
      id: r.id,
      kind: r.kind,
      role: isRole(role) ? role : null,
      app_ids: parseAppIds(r.app_ids),
      user_id: r.user_id,
      username: r.username ?? null,
      created_by: r.created_by,
      created_at: r.created_at,
      expires_at: r.expires_at,
      used_at: r.used_at,
      status: r.used_at !== null ? 'used' : r.expires_at <= at ? 'expired' : 'pending',
    };
  });
}

/** Withdraws an invitation or reset link; answers what it was (for the audit), or throws 404. */
export async function revokeInvitation(
  db: Db,
  actor: Actor,
  id: string,
): Promise<{ kind: InvitationKind; role: Role | null }> {
  const row = await linkWithRole(db, id);
  if (!row) throw notFound('No such invitation');
  const role = row.kind === 'reset' ? row.user_role : row.role;
  requireManage(actor, isRole(role) ? role : null);
  await deleteLinks(db, [id]);
  return { kind: row.kind, role: isRole(role) ? role : null };
}

/**
 * Whether the operator who made a link could still make it: enabled, and holding the permission
 * its role needs (a reset link: an owner's). A link made on the host (no creator) stands. A link
 * never grants more than its creator can grant now, whatever happened to them since.
 */
async function creatorStillGrants(db: Db, invitationId: string): Promise<boolean> {
  const r = await linkGrantRow(db, invitationId);
  if (!r) return false;
  if (r.created_by === null) return true;
  if (r.creator_role == null || r.creator_disabled !== 0 || !isRole(r.creator_role)) return false;
  return mayGrantLink(
    { id: r.created_by, role: r.creator_role },
    r.kind,
    r.kind === 'reset' ? r.target_role : r.role,
  );
}

export interface OpenInvitation {
  id: string;
  kind: InvitationKind;
  role: Role | null;
  expires_at: string;
  /** A reset link: whose password it sets (their username stays). */
  user_id: string | null;
  username: string | null;
}

const gone = () => notFound('This link is unknown, used or expired');

/** The usable invitation a token names, or 404 (unknown, used and expired look the same). */
export async function openInvitation(db: Db, token: string, now = Date.now()): Promise<OpenInvitation> {
  if (!TOKEN_PATTERN.test(token)) throw gone();
  const r = await linkByHash(db, sha256Hex(token));
  if (!r || r.used_at !== null || r.expires_at <= nowIso(now)) throw gone();
  if (r.kind === 'reset' && (r.username == null || r.disabled === 1)) throw gone();
  const role = r.kind === 'reset' ? r.user_role : r.role;
  if (!(await creatorStillGrants(db, r.id))) throw gone();
  return {
    id: r.id,
    kind: r.kind,
    role: isRole(role) ? role : null,
    expires_at: r.expires_at,
    user_id: r.user_id,
    username: r.username ?? null,
  };
}

export interface Accepted {
  invitationId: string;
  kind: InvitationKind;
  userId: string;
  username: string;
}

/**
 * Consumes the link and does its effect, in one transaction: `invite` creates the operator,
 * `reset` sets the password, clears TOTP and recovery codes and ends every session of theirs.
 */
export async function acceptInvitation(
  db: Db,
  token: string,
  input: { username?: string | undefined; hashPassword: () => Promise<string> },
  now = Date.now(),
): Promise<Accepted> {
  const open = await openInvitation(db, token, now);
  if (open.kind === 'invite' && !input.username)
    throw badRequest('username is required to accept an invitation', [
      { field: 'username', message: 'required' },
    ]);
  if (open.kind === 'reset' && input.username !== undefined)
    throw badRequest('A reset link keeps the username: send the new password only', [
      { field: 'username', message: 'not allowed for a reset link' },
    ]);
  // Hashed only for a link that exists, and before the transaction: scrypt must not hold the database.
  const passwordHash = await input.hashPassword();
  const at = nowIso(now);
  const accepted = await db.transaction().execute(async (tx) => {
    if (!(await consumeLink(tx, open.id, at))) throw gone();
    const row = await linkRow(tx, open.id);
    // Checked again inside the transaction: a creator demoted since the page was opened grants nothing.
    if (!(await creatorStillGrants(tx, row.id))) throw gone();
    if (row.kind === 'invite') {
      const username = input.username!;
      // Thrown inside the transaction: the link's used_at goes back with it, so it stays usable.
      if (await usernameTaken(tx, usernameKey(username))) throw conflict('That username is taken');
      const role = isRole(row.role) ? row.role : 'viewer';
      // Apps deleted since the invitation was made are dropped, not refused.
      const wanted = parseAppIds(row.app_ids);
      let apps = wanted;
      if (wanted !== null && wanted.length > 0) apps = await existingAppIds(tx, wanted);
      const id = newId(now);
      // A name taken concurrently (without regard to case) meets the unique index: the same 409.
      await insertUserRow(tx, {
        id,
        username,
        password_hash: passwordHash,
        totp_enabled: 0,
        totp_secret: null,
        totp_pending: null,
        totp_last_step: null,
        created_at: at,
        updated_at: at,
        role,
        app_ids: apps === null ? null : JSON.stringify(apps),
        sso_subject: null,
      }).catch((e: unknown) => {
        throw isUniqueViolation(e) ? conflict('That username is taken') : e;
      });
      return { invitationId: row.id, kind: row.kind, userId: id, username };
    }
    const user = await resetTarget(tx, row.user_id!);
    if (!user || user.disabled === 1) throw gone();
    await resetCredentials(tx, user.id, passwordHash, at);
    return { invitationId: row.id, kind: row.kind, userId: user.id, username: user.username };
  });
  if (accepted.kind === 'reset') invalidateCredentials();
  return accepted;
}
