// What the app endpoints ask of the engine: live services, lifecycle, deletion. The engine
// finds everything by the `svc.app` label, so this survives restarts of the control plane.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Services } from '../http/handler.js';
import { deploymentsWithImages } from '../images/store.js';
import { releaseDeployment } from '../images/keep.js';
import { ensureImage } from '../docker/pull.js';
import { HttpError } from '../http/errors.js';
import {
  listServices,
  stackStart,
  stackStop,
  stackRestart,
  stackRemove,
  stackUp,
  planStack,
  listAppContainers,
  guard,
  isOwned,
  ownedFilter,
  EngineConflictError,
  LABEL_APP,
  LABEL_DATABASE_APP,
  removeOwnedContainer,
  type RemoveResult,
} from '../docker/index.js';
import { singleServiceModel, SINGLE_SERVICE } from '../compose/index.js';
import { DEFAULT_DRAIN_S, type App } from './model.js';
import { followRunning } from '../proxy/deploy.js';
import { refuseNameTakingDomains } from '../proxy/domains.js';
import {
  deleteAppRows,
  getApp,
  insertApp,
  latestDeployedImages,
  markDeleting,
  serviceSettings,
  setSleeping,
} from './store.js';
import { previewScope, publishAppEvent } from './events.js';
import type { AppSource } from './model.js';
import { refreshAppStatus } from './status.js';
import { resolveEnv } from './env.js';
import { removeSwarmServices, swarmLifecycle, swarmServices } from '../cluster/services.js';
import { clusterSettings } from '../cluster/settings.js';

export interface ServiceView {
  name: string;
  image: string;
  status: string;
  health: string | null;
  port: number | null;
  health_path: string | null;
  drain_s: number;
  published_ports: { host_ip: string; host_port: number; container_port: number; protocol: string }[];
  /** Cluster mode: where each task of the service runs. */
  tasks?: { node: string; state: string; container_id?: string }[];
}

const swarm = (env: Services) => env.config.cluster.mode === 'swarm';

/** The app's live services: containers on one host, Swarm services (with their tasks) on a swarm. */
async function liveServices(
  env: Services,
  app: App,
): Promise<Array<Omit<ServiceView, 'port' | 'health_path' | 'drain_s'>>> {
  return swarm(env) ? swarmServices(env.engine, app.name) : listServices(env.engine, app.name);
}

export async function appServices(env: Services, app: App): Promise<ServiceView[]> {
  const [live, settings] = await Promise.all([liveServices(env, app), serviceSettings(env.db, app.id)]);
  return live.map((s) => ({
    name: s.name,
    image: s.image,
    status: s.status,
    health: s.health ?? null,
    port: settings.get(s.name)?.port ?? null,
    health_path: settings.get(s.name)?.health_path ?? null,
    drain_s: settings.get(s.name)?.drain_s ?? DEFAULT_DRAIN_S,
    published_ports: s.published_ports,
    ...(s.tasks ? { tasks: s.tasks } : {}),
  }));
}

export { refreshAppStatus } from './status.js';

/**
 * Settings may be given to a service the app has: one with stored settings (set before, or
 * imported), one its latest deployment ran or planned, one with a container, or the single
 * service "app" of an image app or of a git app before its first deployment (a Dockerfile
 * repository's only service, set up before it first deploys). Any other name is a typo that
 * would otherwise be stored as a phantom.
 */
export async function ensureKnownService(env: Services, app: App, service: string): Promise<void> {
  if ((await serviceSettings(env.db, app.id)).has(service)) return;
  const images = await latestDeployedImages(env.db, app.id);
  if (images && Object.hasOwn(images, service)) return;
  if (service === SINGLE_SERVICE && (app.source.type === 'image' || !images)) return;
  const live = await liveServices(env, app);
  if (live.some((s) => s.name === service)) return;
  const known = [...new Set([...Object.keys(images ?? {}), ...live.map((s) => s.name)])].sort();
  throw new HttpError(
    'not_found',
    `No service "${service}" in app "${app.name}"${known.length ? ` (its services: ${known.join(', ')})` : '; its services are known once it has deployed'}`,
  );
}

export async function ensureService(env: Services, app: App, service: string): Promise<void> {
  const live = await liveServices(env, app);
  if (!live.some((s) => s.name === service))
    throw new HttpError('not_found', `No service "${service}" in app "${app.name}"`);
}

export type Lifecycle = 'start' | 'stop' | 'restart';

export async function lifecycle(
  env: Services,
  app: App,
  action: Lifecycle,
  service?: string,
): Promise<string[]> {
  if (swarm(env)) {
    if (!(await liveServices(env, app)).length)
      throw new HttpError('conflict', `App "${app.name}" has no swarm services: deploy it first`);
    if (service) await ensureService(env, app, service);
    const cs = await clusterSettings(env.db, app.id);
    const touched = await swarmLifecycle(
      env.engine,
      app.name,
      action,
      (svc) => cs.get(svc)?.replicas ?? 1,
      service,
    );
    if (action === 'stop' && !service) await setSleeping(env.db, app.id, null);
    await refreshAppStatus(env, app);
    return touched;
  }
  const existing = await listAppContainers(env.engine, app.name);
  if (!existing.length) {
    if (action !== 'start')
      throw new HttpError('conflict', `App "${app.name}" has no containers: deploy it first`);
    return firstStart(env, app);
  }
  if (service) await ensureService(env, app, service);
  const fn = action === 'start' ? stackStart : action === 'stop' ? stackStop : stackRestart;
  const touched = await fn(env.engine, app.name, service);
  // An operator's stop is meant to last: a sleeping app stopped by hand is no longer woken by requests.
  if (action === 'stop' && !service) await setSleeping(env.db, app.id, null);
  // A stop too: a service with no running container loses its upstreams, so the proxy answers
  // 503 (unavailable) at once instead of retrying dead addresses and answering 502.
  await followRunning(env, app).catch((err) =>
    env.log.warn({ err: String(err), app: app.name }, 'proxy routes not updated'),
  );
  await refreshAppStatus(env, app);
  return touched;
}

/** An image app can be brought up without a build; a git app needs a deployment. */
async function firstStart(env: Services, app: App): Promise<string[]> {
  if (app.source.type !== 'image')
    throw new HttpError(
      'conflict',
      `App "${app.name}" has not been deployed yet: POST /api/apps/${app.id}/deployments`,
    );
  const planned = await planStack(singleServiceModel({ image: app.source.image }), {
    app: app.name,
    env: await resolveEnv(env.db, env.sealer, app.id),
    defaultHostIp: env.config.exposure === 'local' ? '127.0.0.1' : undefined,
  });
  if (!planned.ok)
    throw new HttpError(
      'bad_request',
      'The app cannot be planned',
      planned.findings.map((f) => ({ field: f.key, message: f.message })),
    );
  // Pulled like a deployment's image (with the registry's stored credentials) when the engine lacks it.
  await ensureImage(env.engine, app.source.image);
  const up = await stackUp(env.engine, planned.plan, { deploymentId: 'start' });
  await followRunning(env, app).catch((err) =>
    env.log.warn({ err: String(err), app: app.name }, 'proxy routes not updated'),
  );
  await refreshAppStatus(env, app);
  return up.services.map((s) => s.containerName);
}

/**
 * Deletion order: mark the row (so it disappears from listings and a retry resumes), remove the
 * engine's containers and networks (and volumes only when asked), the working copy and known
 * hosts, then the rows
 * with their sealed secrets. Each step is idempotent, so a failure midway is finished by a retry.
 */
/** A new app row; subscribers of the `apps` topic hear of it. */
export async function createApp(env: Services, name: string, source: AppSource): Promise<App> {
  await refuseNameTakingDomains(env, name);
  const app = await insertApp(env.db, name, source, env.now());
  publishAppEvent(env.bus, { type: 'status', app_id: app.id, app: app.name, status: app.status });
  return app;
}

export async function deleteApp(
  env: Services,
  id: string,
  opts: { volumes: boolean },
): Promise<RemoveResult> {
  const app = await getApp(env.db, id, { includeDeleting: true, includePreview: true });
  // Read before the rows go: the deleted event of a preview still names its app.
  const scope = await previewScope(env.db, id);
  await markDeleting(env.db, id, env.now());
  // Managed databases are not compose services (a deploy must not take them for orphans): they go first.
  await removeAppDatabaseContainers(env, app.name);
  const services = swarm(env) ? await removeSwarmServices(env.engine, app.name) : [];
  const removed = await stackRemove(env.engine, app.name, { volumes: opts.volumes });
  await removeAppImages(env, app.name);
  // The tags that held the images it pulled for rollbacks, and those images if nothing else names them.
  for (const d of await deploymentsWithImages(env.db, id))
    await releaseDeployment(env.engine, app.name, d, (line) => env.log.info({ app: app.name }, line));
  // The working copy and the per-app known_hosts live under the data directory.
  await rm(join(env.config.dataDir, 'work', app.id), { recursive: true, force: true });
  await rm(join(env.config.dataDir, 'ssh', app.id), { recursive: true, force: true });
  await deleteAppRows(env.db, id);
  // Its automatic hosts and upstream rows went with the rows: Caddy stops serving them now, not at
  // its next periodic check.
  if (env.edge.proxy.enabled)
    await env.edge.proxy
      .sync(`delete ${app.name}`)
      .catch((err) =>
        env.log.warn(
          { err: String(err), app: app.name },
          'proxy not updated after the delete; the next check applies it',
        ),
      );
  publishAppEvent(env.bus, { type: 'status', app_id: id, app: app.name, status: 'deleted', ...scope });
  return { ...removed, containers: [...services, ...removed.containers] };
}

/** Its managed databases' containers (lib/databases/); the volumes go with the app's own. */
async function removeAppDatabaseContainers(env: Services, appName: string): Promise<void> {
  const list = await guard(env.engine, () =>
    env.engine.docker.listContainers({
      all: true,
      filters: ownedFilter(env.engine, [`${LABEL_DATABASE_APP}=${appName}`]),
    }),
  );
  for (const c of list)
    if (isOwned(env.engine, 'container', c.Id, c.Labels) && c.Labels?.[LABEL_DATABASE_APP] === appName)
      await removeOwnedContainer(env.engine, c.Id);
}

async function removeAppImages(env: Services, appName: string): Promise<void> {
  await guard(env.engine, async () => {
    const images = await env.engine.docker.listImages({
      filters: ownedFilter(env.engine, [`${LABEL_APP}=${appName}`]),
    });
    for (const img of images) {
      if (!isOwned(env.engine, 'image', img.Id, img.Labels)) continue;
      try {
        await env.engine.docker.getImage(img.Id).remove({ force: true });
      } catch (e) {
        const status = (e as { statusCode?: number }).statusCode;
        // Only a container svc does not manage can still use it (ours are gone): never touched.
        if (status === 409)
          throw new EngineConflictError(
            `image ${img.RepoTags?.[0] ?? img.Id.slice(7, 19)} of the app is used by a container svc does not manage; remove that container, then delete the app again`,
          );
        if (status !== 404) throw e;
      }
    }
  });
}
