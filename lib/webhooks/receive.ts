// An inbound delivery, from raw bytes to a queued deployment. Every authentication failure
// (unknown app, no secret, bad signature) gives the same answer, so app ids cannot be probed.
import type { Env } from '../env.js';
import { HttpError, badRequest } from '../http/errors.js';
import { recordAudit } from '../audit/index.js';
import { ID_PATTERN } from '../crypto/random.js';
import { getApp } from '../apps/store.js';
import type { App } from '../apps/model.js';
import type { Deployment } from '../deploy/model.js';
import { verifyDelivery } from './verify.js';
import { parsePushEvent } from './payload.js';
import { matchTriggers } from './triggers.js';
import { deliverySeen, forgetDelivery, listTriggers, webhookSecret } from './store.js';

export type DeliveryOutcome =
  | { status: 202; body: { deployment: Deployment } }
  | { status: 200; body: { ignored: string } | { duplicate: true } | { ok: true; event: 'ping' } };

const refused = () => new HttpError('unauthorized', 'Webhook signature verification failed');

async function appFor(env: Env, appId: string): Promise<App | null> {
  if (!ID_PATTERN.test(appId)) return null;
  try {
    return await getApp(env.db, appId);
  } catch {
    return null;
  }
}

export async function receiveDelivery(env: Env, appId: string, headers: Headers, body: Uint8Array, ip: string): Promise<DeliveryOutcome> {
  const app = await appFor(env, appId);
  const secret = app ? await webhookSecret(env.db, env.sealer, app.id) : null;
  // Verified even without an app or a secret: the work done (and so the timing) is the same.
  const v = verifyDelivery({ headers, body, secret });
  if (!v.ok || !app) throw refused();
  const audit = (action: string, outcome: number, detail: Record<string, unknown>) =>
    recordAudit(env.db, { actor: `webhook:${v.provider}`, via: 'webhook', action, target: app.id, ip, outcome, detail: { delivery_id: v.deliveryId, event: v.event, ...detail } });

  if (v.deliveryId && (await deliverySeen(env.db, app.id, v.deliveryId, env.now()))) return { status: 200, body: { duplicate: true } };
  const parsed = parsePushEvent(v.provider, v.event, body);
  if (parsed.kind === 'ping') return { status: 200, body: { ok: true, event: 'ping' } };
  if (parsed.kind === 'invalid') {
    if (v.deliveryId) await forgetDelivery(env.db, app.id, v.deliveryId);
    throw badRequest(`Delivery payload is not usable: ${parsed.reason}`);
  }
  if (parsed.kind === 'ignored') return { status: 200, body: { ignored: parsed.reason } };
  if (app.source.type !== 'git') return { status: 200, body: { ignored: 'the app does not deploy from git' } };
  const rules = (await listTriggers(env.db, app.id)).map((t) => ({ event: t.event, pattern: t.pattern, enabled: t.enabled }));
  const match = matchTriggers(rules, parsed, app.source.branch);
  if (!match.deploy) return { status: 200, body: { ignored: match.reason } };
  try {
    const { deployment, superseded } = await env.deployments.enqueue(app, { trigger: match.trigger, ref: match.ref, deliveryId: v.deliveryId, commit: match.commit });
    await audit('webhook.deploy_queued', 202, { deployment: deployment.id, ref: match.ref, commit: match.commit, superseded: superseded.map((d) => d.id) });
    return { status: 202, body: { deployment } };
  } catch (e) {
    // Let the forge's retry through: nothing was queued for this delivery.
    if (v.deliveryId) await forgetDelivery(env.db, app.id, v.deliveryId);
    throw e;
  }
}
