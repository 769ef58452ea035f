// Deploy hooks: one secret URL per app (`POST /hooks/deploy/<token>`) that a CI job calls after it
// pushed an image. The token is shown once; only its SHA-256 is stored, so a leaked database does
// not leak working URLs. A call deploys with `pull: true` (the tag it pushed is pulled again),
// waits behind a running deployment instead of failing, is rate-limited per token, and is audited
// as the system, naming the hook's id (never the token).
import type { Services } from '../http/handler.js';
import { newId, randomToken, sha256Hex } from '../crypto/random.js';
import { nowIso } from '../db/index.js';
import { HttpError, notFound } from '../http/errors.js';
import { RateLimiter } from '../auth/ratelimit.js';
import { recordAudit } from '../audit/index.js';
import { publicBase } from '../auth/invitations.js';
import { getApp } from '../apps/store.js';
import { deleteHook, hookByTokenHash, hookOfApp, replaceHook, touchHook } from './store.js';

export const HOOK_ROUTE = 'POST /hooks/deploy/{token}';
/** Calls per token and minute (a burst of this many, refilled over the minute). */
export const HOOK_CALLS_PER_MINUTE = 10;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface HookInfo {
  exists: boolean;
  id: string | null;
  created_at: string | null;
  last_used_at: string | null;
}

export async function hookInfo(deps: Pick<Services, 'db'>, appId: string): Promise<HookInfo> {
  const h = await hookOfApp(deps.db, appId);
  return {
    exists: !!h,
    id: h?.id ?? null,
    created_at: h?.created_at ?? null,
    last_used_at: h?.last_used_at ?? null,
  };
}

/** A new hook for the app (the old one's URL stops working): its URL, shown only now. */
export async function createHook(
  deps: Pick<Services, 'db' | 'config' | 'now'>,
  appId: string,
): Promise<{ id: string; url: string }> {
  const token = randomToken(32);
  const id = newId(deps.now());
  await replaceHook(deps.db, {
    id,
    app_id: appId,
    token_hash: sha256Hex(token),
    created_at: nowIso(deps.now()),
    last_used_at: null,
  });
  const base = await publicBase(deps.db, deps.config);
  return { id, url: `${base ?? ''}/hooks/deploy/${token}` };
}

export async function removeHook(deps: Pick<Services, 'db'>, appId: string): Promise<void> {
  if (!(await deleteHook(deps.db, appId))) throw notFound('The app has no deploy hook');
}

// One limiter per set of services (a process serves one; tests start several).
const limiters = new WeakMap<object, RateLimiter>();
function limiterOf(db: object): RateLimiter {
  let l = limiters.get(db);
  if (!l) limiters.set(db, (l = new RateLimiter(HOOK_CALLS_PER_MINUTE, 60_000)));
  return l;
}

/** A CI's call: 404 for an unknown token, 429 past the rate, else the queued deployment's id. */
export async function callHook(
  env: Pick<Services, 'db' | 'deployments' | 'now'>,
  token: string,
  ip: string | null,
): Promise<{ deployment_id: string }> {
  if (!TOKEN.test(token)) throw notFound('No such deploy hook');
  const hash = sha256Hex(token);
  const hit = limiterOf(env.db).hit(hash, env.now());
  if (!hit.ok)
    throw new HttpError('rate_limited', 'Too many calls of this deploy hook; try again later', undefined, {
      'retry-after': String(hit.retryAfter),
    });
  const hook = await hookByTokenHash(env.db, hash);
  if (!hook) throw notFound('No such deploy hook');
  const app = await getApp(env.db, hook.app_id).catch(() => null);
  if (!app) throw notFound('No such deploy hook');
  const audit = (outcome: number, detail: Record<string, unknown>) =>
    recordAudit(env.db, {
      route: HOOK_ROUTE,
      actorType: 'system',
      actor: `deploy-hook:${hook.id}`,
      via: 'deploy_hook',
      event: 'app.deploy_hook',
      target: app.id,
      appId: app.id,
      ip,
      outcome,
      detail: { hook_id: hook.id, ...detail },
    });
  try {
    const { deployment } = await env.deployments.enqueue(app, { trigger: 'hook', pull: true });
    await touchHook(env.db, hook.id, nowIso(env.now()));
    await audit(202, { deployment: deployment.id });
    return { deployment_id: deployment.id };
  } catch (e) {
    await audit(e instanceof HttpError ? e.status : 500, { error: (e as Error).message });
    throw e;
  }
}
