// Pull/merge request deliveries, after lib/webhooks verified, parsed and matched them: the preview
// for that number is deployed (opened, updated, reopened) unless it is already at that commit, or
// removed (closed, merged). A pull
// request from a fork runs nothing unless the app's settings allow forks: its code would run
// with whatever the preview receives.
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import type { DeliveryOutcome, PullRequestHandler } from '../webhooks/receive.js';
import type { PullRequest } from '../webhooks/pullrequest.js';
import { deployPreview, previewView, removePreview } from './ops.js';
import { alreadyAt, getSettings, previewByNumber } from './store.js';

export function previewDeliveries(env: Services): PullRequestHandler {
  return (app, pr, delivery) => onPullRequest(env, app, pr, delivery.deliveryId);
}

async function onPullRequest(
  env: Services,
  app: App,
  pr: PullRequest,
  deliveryId: string | null,
): Promise<DeliveryOutcome> {
  if (pr.action === 'remove') {
    const row = await previewByNumber(env.db, app.id, pr.number);
    if (!row) return { status: 200, body: { ignored: `no preview for pull request ${pr.number}` } };
    const shown = await previewView(env, app, row);
    await removePreview(env, row);
    return { status: 202, body: { preview: { ...shown, status: 'removed', sleeping: false } } };
  }
  const settings = await getSettings(env.db, app.id);
  if (!settings.enabled) return { status: 200, body: { ignored: 'previews are off for this app' } };
  if (pr.fork && !settings.from_forks) return { status: 200, body: { ignored: 'fork' } };
  if (pr.fork && !pr.repo_url)
    return { status: 200, body: { ignored: "fork: the delivery does not name the fork's repository" } };
  // The delivery id is not signed: a delivery sent again under a new one (a replay) must not
  // rebuild a preview that already has, or is getting, that commit. A new commit deploys.
  const existing = pr.commit ? await previewByNumber(env.db, app.id, pr.number) : null;
  const there = existing && pr.commit ? await alreadyAt(env.db, existing, pr.branch, pr.commit) : null;
  if (there) return { status: 200, body: { duplicate: true, reason: there } };
  const preview = await deployPreview(env, app, {
    number: pr.number,
    branch: pr.branch,
    title: pr.title,
    commit: pr.commit && /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(pr.commit) ? pr.commit : null,
    repoUrl: pr.fork ? pr.repo_url : null,
    trigger: 'push',
    deliveryId,
  });
  return { status: 202, body: { preview: { ...preview } } };
}
