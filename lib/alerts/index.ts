// Alert rules as the API sees them: checked input, the rule's view, history. Creating, changing
// and deleting a rule are audited (its state kind is `alert_rule`, lib/revert/state.ts), so each
// can be reverted.
import type { Db } from '../db/index.js';
import { badRequest, notFound } from '../http/errors.js';
import { DEFAULT_FOR_S, HOST_ONLY, type AlertMetric, type AlertOp, type AlertRule } from './rules.js';
import {
  appExists,
  channelIdsExist,
  deleteRuleRow,
  getRule,
  insertRule,
  transition,
  updateRuleRow,
  type RuleFields,
} from './store.js';

export interface RuleInput {
  name: string;
  app_id?: string | null;
  metric: AlertMetric;
  op: AlertOp;
  threshold: number;
  for_s?: number;
  channels?: string[];
  enabled?: boolean;
}

export type RulePatch = Partial<RuleInput>;

async function check(db: Db, f: Pick<RuleFields, 'app_id' | 'metric' | 'channels'>): Promise<void> {
  if (f.app_id !== null && HOST_ONLY.has(f.metric))
    throw badRequest(`${f.metric} is measured on the host only: leave app_id out`, [
      { field: 'metric', message: 'host only' },
    ]);
  if (f.app_id !== null && !(await appExists(db, f.app_id)))
    throw badRequest(`No app with id "${f.app_id}"`, [{ field: 'app_id', message: 'no such app' }]);
  const missing = await channelIdsExist(db, f.channels);
  if (missing.length)
    throw badRequest(`No notification channel with id "${missing[0]}"`, [
      { field: 'channels', message: 'no such channel' },
    ]);
}

export async function createRule(db: Db, input: RuleInput, now: number, id?: string): Promise<AlertRule> {
  const fields: RuleFields = {
    name: input.name,
    app_id: input.app_id ?? null,
    metric: input.metric,
    op: input.op,
    threshold: input.threshold,
    for_s: input.for_s ?? DEFAULT_FOR_S,
    channels: [...new Set(input.channels ?? [])],
    enabled: input.enabled !== false,
  };
  await check(db, fields);
  return getRule(db, await insertRule(db, fields, now, id));
}

/**
 * Changes a rule. Disabling a firing rule resolves it (one `alert_resolved`, "the rule was
 * disabled"): a rule nobody evaluates must not stay firing with nobody told it ended.
 */
export async function updateRule(
  db: Db,
  id: string,
  patch: RulePatch,
  now: number,
): Promise<{ rule: AlertRule; resolved: boolean }> {
  const cur = await getRule(db, id);
  const next = {
    app_id: patch.app_id !== undefined ? patch.app_id : cur.app_id,
    metric: patch.metric ?? cur.metric,
    channels: patch.channels !== undefined ? [...new Set(patch.channels)] : cur.channels,
  };
  await check(db, next);
  await updateRuleRow(db, id, { ...patch, channels: patch.channels && next.channels }, now);
  let resolved = false;
  if (patch.enabled === false && cur.state === 'firing') {
    const at = new Date(now).toISOString();
    resolved =
      (await transition(db, {
        rule: cur,
        to: 'ok',
        value: cur.value,
        detail: 'the rule was disabled',
        at,
      })) !== null;
  }
  return { rule: await getRule(db, id), resolved };
}

export async function deleteRule(db: Db, id: string): Promise<void> {
  if (!(await deleteRuleRow(db, id))) throw notFound(`No alert rule with id "${id}"`);
}

/** The fields a revert restores (the state is the evaluator's, never restored). */
export function ruleSettings(r: AlertRule): Record<string, string | number | boolean | null | string[]> {
  return {
    name: r.name,
    app_id: r.app_id,
    metric: r.metric,
    op: r.op,
    threshold: r.threshold,
    for_s: r.for_s,
    channels: r.channels,
    enabled: r.enabled,
  };
}
