// An inbound delivery, from raw bytes to a queued deployment. Every authentication failure
// (unknown app, no secret, bad signature) gives the same answer, so app ids cannot be probed.
// Every delivery to an existing app, refused ones included, leaves a line in its delivery log
// (the answer to "why did my push not deploy?"); the sender's answer does not change for it.
import type { Services } from '../http/handler.js';
import { HttpError, badRequest } from '../http/errors.js';
import { recordAudit } from '../audit/index.js';
import { ID_PATTERN } from '../crypto/random.js';
import { getApp } from '../apps/store.js';
import type { App } from '../apps/model.js';
import type { Deployment } from '../apps/deployment.js';
import { claimedSender, verifyDelivery, type Verified } from './verify.js';
import { recordDelivery, type DeliveryLogInput } from './deliveries-store.js';
import { parsePushEvent } from './payload.js';
import { matchPreviewTarget, matchTriggers } from './triggers.js';
import { isPullRequestEvent, parsePullRequest, type PullRequest } from './pullrequest.js';
import {
  alreadyDeploying,
  deliverySeen,
  forgetDelivery,
  forgetPush,
  listTriggers,
  recordPush,
  webhookSecret,
  type PushKey,
} from './store.js';
import type { PushRef } from './payload.js';

/** What lib/previews answers for a preview it deployed or removed (its view; status `removed` once gone). */
export interface PreviewAnswer {
  id: string;
  app_id: string;
  number: number;
  title: string | null;
  branch: string;
  commit: string | null;
  host: string | null;
  url: string | null;
  status: string;
  deployment_id: string | null;
  sleeping: boolean;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export type DeliveryOutcome =
  | { status: 202; body: { deployment: Deployment } }
  | { status: 202; body: { preview: PreviewAnswer } }
  | {
      status: 200;
      body: { ignored: string } | { duplicate: true; reason?: string } | { ok: true; event: 'ping' };
    };

/**
 * Pull/merge request events go to previews (lib/previews), handed in by the caller so that this
 * folder does not depend on that one. Answers the outcome, or throws an HttpError.
 */
export type PullRequestHandler = (
  app: App,
  pr: PullRequest,
  delivery: { provider: string; deliveryId: string | null },
) => Promise<DeliveryOutcome>;

export interface ReceiveOptions {
  pullRequest?: PullRequestHandler;
}

const refused = () => new HttpError('unauthorized', 'Webhook signature verification failed');

async function appFor(env: Services, appId: string): Promise<App | null> {
  if (!ID_PATTERN.test(appId)) return null;
  try {
    return await getApp(env.db, appId);
  } catch {
    return null;
  }
}

type Facts = Pick<DeliveryLogInput, 'provider' | 'event' | 'deliveryId' | 'ref' | 'commit'>;

/** A log line is worth less than the delivery: a failure to write one is logged, not answered. */
async function logDelivery(env: Services, appId: string, d: DeliveryLogInput): Promise<void> {
  try {
    await recordDelivery(env.db, appId, d, env.now());
  } catch (err) {
    env.log.warn({ err: String(err), app: appId }, 'webhook delivery log write failed');
  }
}

function logged(out: DeliveryOutcome): Pick<DeliveryLogInput, 'outcome' | 'reason' | 'deploymentId'> {
  if (out.status === 202 && 'preview' in out.body) {
    const p = out.body.preview;
    return {
      outcome: 'preview',
      reason: `preview ${p.number} ${p.status === 'removed' ? 'removed' : 'deploying'}`,
      deploymentId: p.deployment_id,
    };
  }
  if (out.status === 202 && 'deployment' in out.body)
    return { outcome: 'deployed', reason: null, deploymentId: out.body.deployment.id };
  const b = out.body;
  if ('ignored' in b) return { outcome: 'ignored', reason: b.ignored, deploymentId: null };
  if ('duplicate' in b)
    return {
      outcome: 'duplicate',
      reason: b.reason ?? 'this delivery id was already received',
      deploymentId: null,
    };
  return { outcome: 'ignored', reason: 'ping (the forge checks that the hook works)', deploymentId: null };
}

/**
 * A delivery refused before it could be verified (compressed, over the size limit): logged for
 * an app that exists, under what its headers claim; the sender's answer stays the refusal.
 */
export async function logRefusedDelivery(
  env: Services,
  appId: string,
  headers: Headers,
  reason: string,
): Promise<void> {
  const app = await appFor(env, appId);
  if (app)
    await logDelivery(env, app.id, {
      ...claimedSender(headers),
      deliveryId: null,
      ref: null,
      commit: null,
      outcome: 'rejected',
      reason,
      deploymentId: null,
    });
}

export async function receiveDelivery(
  env: Services,
  appId: string,
  headers: Headers,
  body: Uint8Array,
  ip: string,
  opts: ReceiveOptions = {},
): Promise<DeliveryOutcome> {
  const app = await appFor(env, appId);
  const secret = app ? await webhookSecret(env.db, env.sealer, app.id) : null;
  // Verified even without an app or a secret: the work done (and so the timing) is the same.
  const v = verifyDelivery({ headers, body, secret });
  if (!v.ok || !app) {
    if (app) {
      const reason =
        secret === null ? 'the app has no webhook secret: regenerate one' : 'signature verification failed';
      await logDelivery(env, app.id, {
        ...claimedSender(headers),
        deliveryId: null,
        ref: null,
        commit: null,
        outcome: 'rejected',
        reason,
        deploymentId: null,
      });
    }
    throw refused();
  }
  const facts: Facts = {
    provider: v.provider,
    event: v.event,
    deliveryId: v.deliveryId,
    ref: null,
    commit: null,
  };
  let out: DeliveryOutcome;
  try {
    out = isPullRequestEvent(v.provider, v.event)
      ? await handlePullRequest(env, app, v, body, ip, facts, opts)
      : await handleVerified(env, app, v, body, ip, facts);
  } catch (e) {
    const reason = e instanceof HttpError ? e.message : 'internal error';
    await logDelivery(env, app.id, { ...facts, outcome: 'rejected', reason, deploymentId: null });
    throw e;
  }
  await logDelivery(env, app.id, { ...facts, ...logged(out) });
  return out;
}

/**
 * A verified pull/merge request delivery: parsed, then (for an opened or updated one) held to the
 * app's pull_request rules on its target branch, then handed to previews.
 */
async function handlePullRequest(
  env: Services,
  app: App,
  v: Verified,
  body: Uint8Array,
  ip: string,
  facts: Facts,
  opts: ReceiveOptions,
): Promise<DeliveryOutcome> {
  if (v.deliveryId && (await deliverySeen(env.db, app.id, v.deliveryId, env.now())))
    return { status: 200, body: { duplicate: true } };
  const pr = parsePullRequest(v.provider, v.event, body);
  if (pr.kind === 'invalid') {
    if (v.deliveryId) await forgetDelivery(env.db, app.id, v.deliveryId);
    throw badRequest(`Delivery payload is not usable: ${pr.reason}`);
  }
  if (pr.kind === 'ignored') return { status: 200, body: { ignored: pr.reason } };
  facts.ref = pr.branch;
  facts.commit = pr.commit;
  if (!opts.pullRequest) return { status: 200, body: { ignored: 'pull requests are not handled here' } };
  if (app.source.type !== 'git')
    return { status: 200, body: { ignored: 'the app does not deploy from git' } };
  if (pr.action === 'deploy') {
    const rules = (await listTriggers(env.db, app.id)).map((t) => ({
      event: t.event,
      pattern: t.pattern,
      enabled: t.enabled,
    }));
    const target = matchPreviewTarget(rules, pr.target);
    if (!target.ok) return { status: 200, body: { ignored: target.reason } };
  }
  let out: DeliveryOutcome;
  try {
    out = await opts.pullRequest(app, pr, { provider: v.provider, deliveryId: v.deliveryId });
  } catch (e) {
    // Nothing was done for this delivery: the forge's retry (same id) must be able to do it.
    if (v.deliveryId) await forgetDelivery(env.db, app.id, v.deliveryId).catch(() => {});
    throw e;
  }
  // As for pushes: a repeat under a new delivery id is a forge's redelivery or a replay.
  if (out.status === 200 && 'duplicate' in out.body)
    await recordAudit(env.db, {
      route: 'POST /webhooks/{appID}',
      actorType: 'system',
      actor: `webhook:${v.provider}`,
      via: 'webhook',
      event: 'webhook.duplicate',
      target: app.id,
      ip,
      outcome: 200,
      detail: {
        delivery_id: v.deliveryId,
        event: v.event,
        pull_request: pr.number,
        ref: pr.branch,
        commit: pr.commit,
        reason: out.body.reason,
      },
    });
  return out;
}

/** A verified delivery; `facts` learns the ref and commit as the payload tells them. */
async function handleVerified(
  env: Services,
  app: App,
  v: Verified,
  body: Uint8Array,
  ip: string,
  facts: Facts,
): Promise<DeliveryOutcome> {
  const audit = (action: string, outcome: number, detail: Record<string, unknown>) =>
    recordAudit(env.db, {
      route: 'POST /webhooks/{appID}',
      actorType: 'system',
      actor: `webhook:${v.provider}`,
      via: 'webhook',
      event: action,
      target: app.id,
      ip,
      outcome,
      detail: { delivery_id: v.deliveryId, event: v.event, ...detail },
    });

  if (v.deliveryId && (await deliverySeen(env.db, app.id, v.deliveryId, env.now())))
    return { status: 200, body: { duplicate: true } };
  const parsed = parsePushEvent(v.provider, v.event, body);
  if (parsed.kind === 'ping') return { status: 200, body: { ok: true, event: 'ping' } };
  if (parsed.kind === 'invalid') {
    if (v.deliveryId) await forgetDelivery(env.db, app.id, v.deliveryId);
    throw badRequest(`Delivery payload is not usable: ${parsed.reason}`);
  }
  if (parsed.kind === 'ignored') return { status: 200, body: { ignored: parsed.reason } };
  facts.ref = parsed.name;
  facts.commit = parsed.after;
  if (app.source.type !== 'git')
    return { status: 200, body: { ignored: 'the app does not deploy from git' } };
  const rules = (await listTriggers(env.db, app.id)).map((t) => ({
    event: t.event,
    pattern: t.pattern,
    enabled: t.enabled,
  }));
  const match = matchTriggers(rules, parsed, app.source.branch);
  if (!match.deploy) return { status: 200, body: { ignored: match.reason } };
  // Delivery ids are not signed (a replay can carry a new one, or none): what the forge signed is
  // the ref update itself, so that is what decides whether this push was already received.
  const pushed = [parsed as PushRef, ...(parsed.also ?? [])].find(
    (r) => r.name === match.ref && (r.ref_type === 'tag') === (match.trigger === 'tag'),
  )!;
  const key: PushKey = { ref: pushed.ref, old: pushed.before ?? '', new: match.commit! };
  facts.ref = match.ref;
  facts.commit = key.new;
  // Recorded in the audit feed: a repeat whose delivery id is new is either a forge's redelivery or a replay.
  const duplicate = async (reason: string): Promise<DeliveryOutcome> => {
    await audit('webhook.duplicate', 200, { ref: match.ref, commit: key.new, reason });
    return { status: 200, body: { duplicate: true, reason } };
  };
  if (!(await recordPush(env.db, app.id, key, env.now())))
    return duplicate(`this push of ${key.new.slice(0, 12)} to ${key.ref} was already received`);
  let queued;
  try {
    const busy = await alreadyDeploying(env.db, app.id, match.ref, key.new);
    if (busy) return await duplicate(busy);
    queued = await env.deployments.enqueue(app, {
      trigger: match.trigger,
      ref: match.ref,
      deliveryId: v.deliveryId,
      commit: key.new,
    });
  } catch (e) {
    // Nothing was queued for this delivery: the forge's retry (same id, same push) must deploy.
    if (v.deliveryId) await forgetDelivery(env.db, app.id, v.deliveryId).catch(() => {});
    await forgetPush(env.db, app.id, key).catch(() => {});
    throw e;
  }
  const { deployment, superseded } = queued;
  await audit('webhook.deploy_queued', 202, {
    deployment: deployment.id,
    ref: match.ref,
    commit: match.commit,
    superseded: superseded.map((d) => d.id),
  });
  return { status: 202, body: { deployment } };
}
