// Every query of alert rules and their events. A transition and its event are one transaction,
// conditional on the state the evaluator read, so a rule fires once however many evaluators
// (or restarts) race on it; the event row is the outbox of its one notification.
import type { Db } from '../db/index.js';
import { newId } from '../crypto/random.js';
import { notFound } from '../http/errors.js';
import type { AlertEvent, AlertEventKind, AlertMetric, AlertOp, AlertRule, AlertState } from './rules.js';

type RuleRow = Awaited<ReturnType<typeof ruleRows>>[number];
const ruleRows = (db: Db) => db.selectFrom('alert_rules').selectAll().execute();
type EventRow = Awaited<ReturnType<typeof eventRows>>[number];
const eventRows = (db: Db) => db.selectFrom('alert_events').selectAll().execute();

const EVENTS_KEPT = 5_000;

function ruleView(r: RuleRow): AlertRule {
  return {
    id: r.id,
    name: r.name,
    app_id: r.app_id,
    metric: r.metric as AlertMetric,
    op: r.op as AlertOp,
    threshold: r.threshold,
    for_s: r.for_s,
    channels: JSON.parse(r.channels) as string[],
    enabled: r.enabled === 1,
    state: r.state as AlertState,
    since: r.since,
    value: r.last_value,
    evaluated_at: r.evaluated_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

function eventView(r: EventRow): AlertEvent {
  return {
    id: String(r.id),
    rule_id: r.rule_id,
    rule: r.rule_name,
    app_id: r.app_id,
    metric: r.metric as AlertMetric,
    kind: r.kind as AlertEventKind,
    value: r.value,
    threshold: r.threshold,
    detail: r.detail,
    at: r.at,
    notified: r.notify_state === 'sent',
    notified_at: r.notified_at,
  };
}

export async function listRules(db: Db): Promise<AlertRule[]> {
  return (await db.selectFrom('alert_rules').selectAll().orderBy('created_at').orderBy('id').execute()).map(
    ruleView,
  );
}

export async function findRule(db: Db, id: string): Promise<AlertRule | null> {
  const r = await db.selectFrom('alert_rules').selectAll().where('id', '=', id).executeTakeFirst();
  return r ? ruleView(r) : null;
}

export async function getRule(db: Db, id: string): Promise<AlertRule> {
  const r = await findRule(db, id);
  if (!r) throw notFound(`No alert rule with id "${id}"`);
  return r;
}

/** The pending_since of a rule (not part of its view). */
export async function pendingSince(db: Db, id: string): Promise<string | null> {
  const r = await db
    .selectFrom('alert_rules')
    .select('pending_since')
    .where('id', '=', id)
    .executeTakeFirst();
  return r?.pending_since ?? null;
}

export interface RuleFields {
  name: string;
  app_id: string | null;
  metric: AlertMetric;
  op: AlertOp;
  threshold: number;
  for_s: number;
  channels: string[];
  enabled: boolean;
}

export async function insertRule(db: Db, f: RuleFields, now: number, id = newId(now)): Promise<string> {
  const at = new Date(now).toISOString();
  await db
    .insertInto('alert_rules')
    .values({
      id,
      ...f,
      channels: JSON.stringify(f.channels),
      enabled: f.enabled ? 1 : 0,
      state: 'ok',
      since: at,
      pending_since: null,
      last_value: null,
      evaluated_at: null,
      created_at: at,
      updated_at: at,
    })
    .execute();
  return id;
}

export async function updateRuleRow(db: Db, id: string, f: Partial<RuleFields>, now: number): Promise<void> {
  const set: Record<string, unknown> = { updated_at: new Date(now).toISOString() };
  for (const [k, v] of Object.entries(f)) {
    if (v === undefined) continue;
    set[k] = k === 'channels' ? JSON.stringify(v) : k === 'enabled' ? (v ? 1 : 0) : v;
  }
  // A changed condition starts its wait again.
  if (
    f.metric !== undefined ||
    f.op !== undefined ||
    f.threshold !== undefined ||
    f.for_s !== undefined ||
    f.app_id !== undefined
  )
    set.pending_since = null;
  await db.updateTable('alert_rules').set(set).where('id', '=', id).execute();
}

export async function deleteRuleRow(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('alert_rules').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Records an evaluation that changes no state. */
export async function noteEvaluation(
  db: Db,
  id: string,
  v: { value: number | null; pending_since: string | null; at: string },
): Promise<void> {
  await db
    .updateTable('alert_rules')
    .set({ last_value: v.value, pending_since: v.pending_since, evaluated_at: v.at })
    .where('id', '=', id)
    .execute();
}

export interface Transition {
  rule: AlertRule;
  to: AlertState;
  value: number | null;
  detail: string | null;
  at: string;
}

/**
 * Moves the rule from its state to `to` and writes the event (pending notification), in one
 * transaction; answers the event's id, or null when the rule was no longer in the state read.
 */
export async function transition(db: Db, t: Transition): Promise<string | null> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('alert_rules')
      .set({ state: t.to, since: t.at, pending_since: null, last_value: t.value, evaluated_at: t.at })
      .where('id', '=', t.rule.id)
      .where('state', '=', t.rule.state)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return null;
    const e = await tx
      .insertInto('alert_events')
      .values({
        rule_id: t.rule.id,
        rule_name: t.rule.name,
        app_id: t.rule.app_id,
        metric: t.rule.metric,
        kind: t.to === 'firing' ? 'fired' : 'resolved',
        value: t.value,
        threshold: t.rule.threshold,
        detail: t.detail,
        at: t.at,
        notify_state: 'pending',
        notified_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return String(e.id);
  });
}

/** Events whose notification has not gone out yet, oldest first. */
export async function pendingEvents(
  db: Db,
  limit = 50,
): Promise<Array<AlertEvent & { op: AlertOp | null; channels: string[]; since: string | null }>> {
  const rows = await db
    .selectFrom('alert_events')
    .leftJoin('alert_rules', 'alert_rules.id', 'alert_events.rule_id')
    .selectAll('alert_events')
    .select(['alert_rules.op as op', 'alert_rules.channels as channels', 'alert_rules.since as since'])
    .where('alert_events.notify_state', '=', 'pending')
    .orderBy('alert_events.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    ...eventView(r),
    op: (r.op as AlertOp | null) ?? null,
    channels: r.channels ? (JSON.parse(r.channels) as string[]) : [],
    since: r.since ?? null,
  }));
}

export async function markNotified(db: Db, eventId: string, at: string): Promise<void> {
  await db
    .updateTable('alert_events')
    .set({ notify_state: 'sent', notified_at: at })
    .where('id', '=', Number(eventId))
    .execute();
}

/** Newest first; `before` is the cursor (an event id). */
export async function listEvents(
  db: Db,
  q: { ruleId?: string; appIds?: ReadonlySet<string> | null; before?: number; limit: number },
): Promise<AlertEvent[]> {
  let sel = db.selectFrom('alert_events').selectAll().orderBy('id', 'desc').limit(q.limit);
  if (q.ruleId) sel = sel.where('rule_id', '=', q.ruleId);
  if (q.before !== undefined) sel = sel.where('id', '<', q.before);
  if (q.appIds) {
    const ids = [...q.appIds];
    sel = sel.where((eb) =>
      ids.length ? eb.or([eb('app_id', 'is', null), eb('app_id', 'in', ids)]) : eb('app_id', 'is', null),
    );
  }
  return (await sel.execute()).map(eventView);
}

/** Keeps the newest events (the history is bounded); pending ones are never removed. */
export async function pruneEvents(db: Db): Promise<void> {
  const keep = await db
    .selectFrom('alert_events')
    .select('id')
    .orderBy('id', 'desc')
    .limit(1)
    .offset(EVENTS_KEPT - 1)
    .executeTakeFirst();
  if (keep)
    await db
      .deleteFrom('alert_events')
      .where('id', '<', keep.id)
      .where('notify_state', '=', 'sent')
      .execute();
}

export async function channelIdsExist(db: Db, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await db.selectFrom('notification_channels').select('id').where('id', 'in', ids).execute();
  const have = new Set(rows.map((r) => r.id));
  return ids.filter((i) => !have.has(i));
}

export async function appExists(db: Db, id: string): Promise<boolean> {
  return !!(await db.selectFrom('apps').select('id').where('id', '=', id).executeTakeFirst());
}

/** The app's name for messages (null: gone). */
export async function appName(db: Db, id: string): Promise<string | null> {
  const r = await db.selectFrom('apps').select('name').where('id', '=', id).executeTakeFirst();
  return r?.name ?? null;
}
