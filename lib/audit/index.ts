import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';

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
}

export async function recordAudit(db: Db, e: AuditEntryInput): Promise<void> {
  await db
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
    })
    .execute();
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
}

export async function listAudit(db: Db, opts: { cursor?: number; limit: number }): Promise<{ items: AuditEntry[]; next_cursor?: string }> {
  let q = db.selectFrom('audit').selectAll().orderBy('id', 'desc').limit(opts.limit + 1);
  if (opts.cursor !== undefined) q = q.where('id', '<', opts.cursor);
  const rows = await q.execute();
  const page = rows.slice(0, opts.limit);
  const items = page.map((r) => ({
    id: String(r.id),
    at: r.at,
    actor: { id: r.actor_id, username: r.actor, via: r.via },
    action: r.action,
    target: r.target,
    ip: r.ip,
    outcome: r.outcome,
    detail: r.detail ? (JSON.parse(r.detail) as Record<string, unknown>) : null,
  }));
  const out: { items: AuditEntry[]; next_cursor?: string } = { items };
  if (rows.length > opts.limit && page.length) out.next_cursor = String(page[page.length - 1]!.id);
  return out;
}
