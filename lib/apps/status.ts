// An app's status, derived in this one place from the engine's containers (state and health) and
// the app's deployments; every writer and every read goes through it, so two reads of an
// unchanged app give the same answer.
import type { Services } from '../http/handler.js';
import type { Db } from '../db/index.js';
import { ACTIVE } from './deployment.js';
import { EngineUnavailableError, listAllServices, listServices, type ServiceState } from '../docker/index.js';
import type { App, AppStatus } from './model.js';
import { appStatusRows, appsDeploying, lastFinishedDeployments, setAppStatus } from './store.js';
import { previewScope, publishAppEvent } from './events.js';
import { swarmServiceStates } from '../cluster/services.js';

type Live = Pick<ServiceState, 'status' | 'health'>[];

/** One app's live services (null: every app's), from containers or, on a swarm, Swarm services. */
async function live(env: Services, app: string | null): Promise<Map<string, Live>> {
  if (env.config.cluster.mode === 'swarm')
    return swarmServiceStates(env.engine, app) as Promise<Map<string, Live>>;
  return app ? new Map([[app, await listServices(env.engine, app)]]) : listAllServices(env.engine);
}

export interface StatusFacts {
  /** What the database holds now (the answer when the engine has nothing to say). */
  stored: AppStatus;
  /** A deployment of the app has been admitted and has not finished. */
  deploying: boolean;
  /** The app's last finished deployment failed (or was interrupted). */
  lastFailed: boolean;
  services: Pick<ServiceState, 'status' | 'health'>[];
  /** The app was put to sleep and nothing woke it since. */
  sleeping?: boolean;
  /** The crash watcher's episode for the app (lib/apps/crash.ts), until a service is healthy again. */
  crash?: 'crash_loop' | 'oom' | null;
}

/**
 * - deploying: while a deployment runs, whatever its new containers do (they start next to the old
 *   ones, unhealthy until their gate passes, and may be thrown away);
 * - no containers: `created` until something ran, `failed` when the last deployment failed,
 *   else `stopped`;
 * - running: every service's live container is running and healthy (or has no healthcheck);
 * - stopped: no service has a running container;
 * - degraded: anything between (a service exited, restarting, unhealthy, or not yet healthy);
 * - sleeping: put to sleep when idle (lib/sleep/index.ts) and no service runs;
 * - crash_loop / oom: a crash episode (3 unexpected exits in 5 minutes, or an OOM kill) until the
 *   service is healthy again.
 */
export function deriveStatus(f: StatusFacts): AppStatus {
  if (f.deploying) return 'deploying';
  // A crash episode outranks what the containers show for a moment (a restarting one looks up).
  if (f.crash) return f.crash;
  if (f.sleeping && f.services.every((s) => s.status !== 'running')) return 'sleeping';
  if (f.services.length === 0) {
    if (f.stored === 'created') return 'created';
    return f.lastFailed ? 'failed' : 'stopped';
  }
  const up = (s: StatusFacts['services'][number]) =>
    s.status === 'running' && (s.health === 'healthy' || s.health === 'none');
  if (f.services.every(up)) return 'running';
  if (f.services.every((s) => s.status !== 'running')) return 'stopped';
  return 'degraded';
}

interface DbFacts {
  stored: AppStatus;
  sleeping: boolean;
  deploying: boolean;
  lastFailed: boolean;
}

async function dbFacts(db: Db, appIds: string[]): Promise<Map<string, DbFacts>> {
  const out = new Map<string, DbFacts>();
  if (!appIds.length) return out;
  const apps = await appStatusRows(db, appIds);
  for (const a of apps)
    out.set(a.id, {
      stored: a.status as AppStatus,
      sleeping: !!a.sleeping_at,
      deploying: false,
      lastFailed: false,
    });
  for (const id of await appsDeploying(db, appIds, ACTIVE)) out.get(id)!.deploying = true;
  const last = await lastFinishedDeployments(db, appIds, ACTIVE);
  for (const d of last) out.get(d.app_id)!.lastFailed = d.status === 'failed' || d.status === 'interrupted';
  return out;
}

async function settle(
  env: Services,
  app: Pick<App, 'id' | 'name'>,
  facts: DbFacts,
  services: Live,
): Promise<AppStatus> {
  const status = deriveStatus({ ...facts, services, crash: env.crashes?.state(app.name) ?? null });
  if (status !== facts.stored) {
    await setAppStatus(env.db, app.id, status, env.now());
    publishAppEvent(env.bus, {
      type: 'status',
      app_id: app.id,
      app: app.name,
      status,
      ...(await previewScope(env.db, app.id)),
    });
  }
  return status;
}

/** Derives the app's status from the engine now, stores it when it changed, and returns it. */
export async function refreshAppStatus(env: Services, app: Pick<App, 'id' | 'name'>): Promise<AppStatus> {
  const [byApp, facts] = await Promise.all([live(env, app.name), dbFacts(env.db, [app.id])]);
  const services = byApp.get(app.name) ?? [];
  const f = facts.get(app.id);
  if (!f) return 'stopped'; // deleted meanwhile
  return settle(env, app, f, services);
}

/**
 * For reads (GET /api/apps, /api/apps/{id}): the derived status of each app, with one engine call
 * for all of them. Without an engine the stored status is the best answer there is.
 */
export async function currentStatuses<T extends Pick<App, 'id' | 'name' | 'status'>>(
  env: Services,
  apps: T[],
): Promise<T[]> {
  if (!apps.length) return apps;
  let all: Map<string, Live>;
  try {
    all = await live(env, apps.length === 1 ? apps[0]!.name : null);
  } catch (e) {
    if (e instanceof EngineUnavailableError) return apps;
    throw e;
  }
  const facts = await dbFacts(
    env.db,
    apps.map((a) => a.id),
  );
  const out: T[] = [];
  for (const app of apps) {
    const f = facts.get(app.id);
    out.push(f ? { ...app, status: await settle(env, app, f, all.get(app.name) ?? []) } : app);
  }
  return out;
}
