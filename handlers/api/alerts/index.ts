import { z } from 'zod';
import { createRule } from '#lib/alerts/index.js';
import { listRules } from '#lib/alerts/store.js';
import { alertRuleSchema } from '#lib/api/alerts.js';
import { items } from '#lib/api/common.js';
import { visible } from '#lib/auth/access.js';
import { route } from '#lib/http/route.js';
import { createBody } from './_lib.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'The alert rules with their state',
    description: "A caller limited to some apps sees the host's rules and those of its apps.",
    responses: { 200: items(alertRuleSchema) },
  },
  async (_req, { env, principal, reply }) =>
    reply(200, { items: visible(principal, await listRules(env.db), (r) => r.app_id) }),
);

export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Add an alert rule',
    description:
      'On the host (`app_id` null) or an app. Levels (cpu_percent, memory_percent, disk_percent, unhealthy, certificate_days_left, backup_age_*) must hold for `for_s` before the rule fires; counted metrics (restarts, http_5xx_rate, p95_latency_ms) are measured over the last `for_s` (at least 60 s). One notification when it fires, one when it resolves.',
    body: createBody,
    responses: { 201: z.object({ alert: alertRuleSchema }) },
    audit: { action: 'alert.rule_created', state: { kind: 'alert_rule' } },
  },
  async (_req, { env, body, reply, audit }) => {
    const alert = await createRule(env.db, body, env.now());
    audit({ target: alert.id, detail: { name: alert.name, metric: alert.metric, app_id: alert.app_id } });
    void env.alerts.evaluator.evaluate();
    return reply(201, { alert });
  },
);
