import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import { isStateKind, type State } from './state.js';

export interface AuditEntryInput {
  actorId?: string | null;
  actor?: string | null;
  via?: string | null;
  action: string;
  target?: string | null;
  ip?: string | null;
  outcome: number;
  /** Safe, non-secret facts only: never a value, a password, a token or a key. */
  detail?: Record<string, unknown> | null;
  /** The target's state around the change (lib/audit/state.ts): secrets only masked or sealed. */
  state?: { kind: string; id: string; before: State | null; after: State | null } | null;
  /** This entry reverts that one: the original learns which entry reverted it. */
  revertOf?: number | null;
}

/** Writes one entry (and links a revert to its original in the same transaction); answers its id. */
export async function recordAudit(db: Db, e: AuditEntryInput): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .insertInto('audit')
      .values({
        at: nowIso(),
        actor_id: e.actorId ?? null,
        actor: e.actor ?? null,
        via: e.via ?? null,
        action: e.action,
        target: e.target ?? null,
        ip: e.ip ?? null,
        outcome: e.outcome,
        detail: e.detail ? JSON.stringify(e.detail) : null,
        target_kind: e.state?.kind ?? null,
        target_id: e.state?.id ?? null,
        state_before: e.state ? JSON.stringify(e.state.before) : null,
        state_after: e.state ? JSON.stringify(e.state.after) : null,
        has_state: e.state ? 1 : null,
        revert_of: e.revertOf ?? null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    if (e.revertOf != null) await tx.updateTable('audit').set({ reverted_by: r.id }).where('id', '=', e.revertOf).execute();
    return r.id;
  });
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: { id: string | null; username: string | null; via: string | null };
  action: string;
  target: string | null;
  ip: string | null;
  outcome: number;
  detail: Record<string, unknown> | null;
  /** The kind of state recorded (app_env, domain...), null when the entry has none (not diffable). */
  target_type: string | null;
  revertible: boolean;
  reverted_at: string | null;
  reverted_by: string | null;
  revert_of: string | null;
}

export interface AuditFilter {
  cursor?: number;
  limit: number;
  /** An operator's username. */
  actor?: string;
  /** A prefix of the action (`app.` or `app.env_replaced`). */
  action?: string;
  /** The target as listed, or the recorded target id. */
  target?: string;
  since?: string;
  until?: string;
}

type Row = Awaited<ReturnType<typeof selectRows>>[number];
const selectRows = (db: Db) => db.selectFrom('audit').selectAll().execute();

export const isOk = (outcome: number) => outcome >= 200 && outcome < 300;

function entry(r: Row): AuditEntry {
  const diffable = r.has_state === 1 && isStateKind(r.target_kind) && isOk(r.outcome);
  return {
    id: String(r.id),
    at: r.at,
    actor: { id: r.actor_id, username: r.actor, via: r.via },
    action: r.action,
    target: r.target,
    ip: r.ip,
    outcome: r.outcome,
    detail: r.detail ? (JSON.parse(r.detail) as Record<string, unknown>) : null,
    target_type: diffable ? r.target_kind : null,
    revertible: diffable && r.reverted_at === null,
    reverted_at: r.reverted_at,
    reverted_by: r.reverted_by === null ? null : String(r.reverted_by),
    revert_of: r.revert_of === null ? null : String(r.revert_of),
  };
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => '\\' + c);

export async function listAudit(db: Db, opts: AuditFilter): Promise<{ items: AuditEntry[]; next_cursor?: string }> {
  let q = db.selectFrom('audit').selectAll().orderBy('id', 'desc').limit(opts.limit + 1);
  if (opts.cursor !== undefined) q = q.where('id', '<', opts.cursor);
  if (opts.actor) q = q.where('actor', '=', opts.actor);
  if (opts.action) q = q.where(sql<boolean>`action like ${escapeLike(opts.action) + '%'} escape '\\'`);
  if (opts.target) {
    const t = opts.target;
    q = q.where((eb) => eb.or([eb('target', '=', t), eb('target_id', '=', t)]));
  }
  if (opts.since) q = q.where('at', '>=', opts.since);
  if (opts.until) q = q.where('at', '<=', opts.until);
  const rows = await q.execute();
  const page = rows.slice(0, opts.limit);
  const out: { items: AuditEntry[]; next_cursor?: string } = { items: page.map(entry) };
  if (rows.length > opts.limit && page.length) out.next_cursor = String(page[page.length - 1]!.id);
  return out;
}

export async function getAuditRow(db: Db, id: number): Promise<Row | null> {
  return (await db.selectFrom('audit').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}
