// Diff and revert of an audit entry (docs/api.md "Audit diff and revert"). The entry holds the
// target's state before and after the change (lib/revert/state.ts); a revert hands `before` to the
// target kind's applier, i.e. to the same lib functions the original route called.
import type { Services } from '../http/handler.js';
import { HttpError, notFound } from '../http/errors.js';
import { nowIso } from '../db/index.js';
import { isOk, withoutOtherApps } from '../audit/index.js';
import { claimRevert, getAuditRow, releaseRevert } from '../audit/store.js';
import { isApp } from '../apps/store.js';
import { STATE_KINDS, notDiffable, sameState, sameValue } from './state.js';
import {
  isMasked,
  isStateKind,
  type DiffStatus,
  type FieldValue,
  type State,
  type StateKindName,
} from '../audit/kinds.js';

export interface DiffRow {
  field: string;
  status: DiffStatus;
  before?: unknown;
  after?: unknown;
  masked: boolean;
}

interface Recorded {
  id: number;
  kind: StateKindName;
  targetId: string;
  before: State | null;
  after: State | null;
  revertedAt: string | null;
}

async function recorded(env: Services, id: number): Promise<Recorded> {
  const row = await getAuditRow(env.db, id);
  if (!row) throw notFound('No such audit entry');
  if (row.has_state !== 1 || !isStateKind(row.target_kind) || row.target_id === null || !isOk(row.outcome)) {
    throw notDiffable(
      'This entry records no state to compare or restore (a login, a deployment, a failed request...)',
    );
  }
  return {
    id,
    kind: row.target_kind,
    targetId: row.target_id,
    before: JSON.parse(row.state_before ?? 'null') as State | null,
    after: JSON.parse(row.state_after ?? 'null') as State | null,
    revertedAt: row.reverted_at,
  };
}

/**
 * The `<METHOD> <pattern>` of the route whose effect an entry records (null: none, or no such
 * entry). A revert's entry records the effect of the route it undid: reverting it again is that
 * route's effect once more, so the chain is followed to the original.
 */
export async function entryRoute(env: Services, id: number): Promise<string | null> {
  let row = await getAuditRow(env.db, id);
  for (let hops = 0; row && row.revert_of !== null && hops < 64; hops++)
    row = await getAuditRow(env.db, row.revert_of);
  return row?.route ?? null;
}

/** The app an entry concerns (null: none; undefined: no such entry), for the reach of diff and revert. */
export async function entryApp(env: Services, id: number | string): Promise<string | null | undefined> {
  const n = Number(id);
  if (!Number.isSafeInteger(n)) return undefined;
  const row = await getAuditRow(env.db, n);
  if (!row) return undefined;
  if (row.app_id !== null) return row.app_id;
  // An entry that did not learn its app but targets one is about that app (the listing hides it the same way).
  for (const t of [row.target, row.target_id]) {
    if (t && (await isApp(env.db, t))) return t;
  }
  return null;
}

/**
 * Every app a revert of the entry touches: where its target is now and where the recorded state
 * puts it back (a domain moved from A to B since: A and B). The caller needs the route's
 * permission on each (null: no app), besides the entry's own app. Unknown entry: none.
 */
export async function revertReach(env: Services, id: number): Promise<Array<string | null>> {
  let r: Recorded;
  try {
    r = await recorded(env, id);
  } catch {
    return [];
  }
  const kind = STATE_KINDS[r.kind];
  const current = await kind.read(env, r.targetId);
  return [...new Set([...kind.apps(r.targetId, current), ...kind.apps(r.targetId, r.before)])];
}

/** The kind and id of an entry's target, for the audit stage of the revert itself (null: none). */
export async function entryTarget(
  env: Services,
  id: number,
): Promise<{ kind: StateKindName; id: string } | null> {
  try {
    const r = await recorded(env, id);
    return { kind: r.kind, id: r.targetId };
  } catch {
    return null;
  }
}

export function diffRows(before: State | null, after: State | null): DiffRow[] {
  const b = before ?? {};
  const a = after ?? {};
  const fields = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort();
  return fields.map((field) => {
    const inB = Object.hasOwn(b, field);
    const inA = Object.hasOwn(a, field);
    const masked = (inB && isMasked(b[field])) || (inA && isMasked(a[field]));
    const status: DiffRow['status'] = !inB
      ? 'added'
      : !inA
        ? 'removed'
        : sameValue(b[field], a[field])
          ? 'unchanged'
          : 'changed';
    const row: DiffRow = { field, status, masked };
    // A secret is never shown, not even sealed: only whether it changed.
    if (!masked) {
      if (inB) row.before = b[field] as FieldValue;
      if (inA) row.after = a[field] as FieldValue;
    }
    return row;
  });
}

/** `apps`: the reader's apps (null: all); the states are shown as the listing shows an entry's detail. */
export async function diffEntry(
  env: Services,
  id: number,
  apps: ReadonlySet<string> | null = null,
): Promise<{ rows: DiffRow[]; changed_since: boolean }> {
  const r = await recorded(env, id);
  const current = await STATE_KINDS[r.kind].read(env, r.targetId);
  const seen = (s: State | null) => (apps ? (withoutOtherApps(s, apps) as State | null) : s);
  return { rows: diffRows(seen(r.before), seen(r.after)), changed_since: !sameState(current, r.after) };
}

/**
 * Applies the entry's before-state. The entry is claimed (reverted_at) before anything is applied,
 * so two concurrent reverts cannot both apply; a failed apply releases the claim.
 * Answers the target's id after the revert (a re-created target has a new one).
 */
export async function revertEntry(
  env: Services,
  id: number,
  opts: { force: boolean },
): Promise<{ kind: StateKindName; targetId: string }> {
  const r = await recorded(env, id);
  if (r.revertedAt !== null)
    throw new HttpError('conflict', `Audit entry ${id} was already reverted at ${r.revertedAt}`);
  const kind = STATE_KINDS[r.kind];
  const current = await kind.read(env, r.targetId);
  if (!opts.force && !sameState(current, r.after)) {
    throw new HttpError(
      'conflict',
      'The target changed after this entry (a later change, or it was deleted): revert with {"force": true} to apply the recorded state anyway',
    );
  }
  if (!(await claimRevert(env.db, id, nowIso(env.now()))))
    throw new HttpError('conflict', `Audit entry ${id} was already reverted`);
  try {
    const newId = await kind.apply(env, r.targetId, r.before, current);
    return { kind: r.kind, targetId: newId ?? r.targetId };
  } catch (e) {
    await releaseRevert(env.db, id);
    throw e;
  }
}
