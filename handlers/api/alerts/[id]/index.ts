import { deleteRule, updateRule } from '#lib/alerts/index.js';
import { getRule } from '#lib/alerts/store.js';
import { alertRuleSchema } from '#lib/api/alerts.js';
import { reachesApp } from '#lib/auth/access.js';
import { notFound } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';
import { patchBody, ruleParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'One alert rule with its state',
    params: ruleParams,
    responses: { 200: alertRuleSchema },
  },
  async (_req, { env, params, principal, reply }) => {
    const rule = await getRule(env.db, params.id);
    // A rule on an app out of reach is as absent as a missing one.
    if (rule.app_id && principal && !reachesApp(principal, rule.app_id))
      throw notFound(`No alert rule with id "${params.id}"`);
    return reply(200, rule);
  },
);

export const PATCH = route(
  {
    permission: 'instance.admin',
    summary: 'Change an alert rule',
    description: 'Disabling a firing rule resolves it (one `alert_resolved`).',
    params: ruleParams,
    body: patchBody,
    responses: { 200: alertRuleSchema },
    audit: {
      action: 'alert.rule_updated',
      target: (c) => c.params.id,
      state: { kind: 'alert_rule', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const { rule, resolved } = await updateRule(env.db, params.id, body, env.now());
    audit({ target: rule.id, detail: { fields: Object.keys(body) } });
    if (resolved) env.alerts.outbox.kick();
    return reply(200, rule);
  },
);

export const DELETE = route(
  {
    permission: 'instance.admin',
    summary: 'Delete an alert rule (its history stays)',
    params: ruleParams,
    responses: { 204: null },
    audit: {
      action: 'alert.rule_deleted',
      target: (c) => c.params.id,
      state: { kind: 'alert_rule', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, reply }) => {
    await deleteRule(env.db, params.id);
    return reply(204);
  },
);
