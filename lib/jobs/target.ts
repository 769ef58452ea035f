// What a run runs: the service of the app's current deployment, its exact image and its
// environment, as a template for the one-off (a container on one host, a job service on a swarm).
import type Docker from 'dockerode';
import type { Services } from '../http/handler.js';
import { conflict } from '../http/errors.js';
import type { App } from '../apps/model.js';
import type { Deployment } from '../apps/deployment.js';
import { mainImage } from '../apps/deployment.js';
import {
  guard,
  isNotFound,
  listAppContainers,
  templateFromContainer,
  type Engine,
  type OneOffTemplate,
} from '../docker/index.js';
import { liveServiceSpec } from '../cluster/oneoff.js';
import { currentDeployment } from './store.js';

/** A one-off's template, where it runs. */
export type Target =
  | { kind: 'host'; template: OneOffTemplate }
  | { kind: 'swarm'; spec: Docker.CreateServiceOptions; app: string; service: string; deploymentId: string };

/** Why a run cannot start: `never_deployed` is a scheduled run's `skipped`, anything else its `failed`. */
export class TargetError extends Error {
  constructor(
    message: string,
    readonly kind: 'never_deployed' | 'unavailable',
  ) {
    super(message);
  }
}

/** The service a job or command without one runs in: `app`, else the first built, else the first. */
export function mainService(images: Record<string, string> | null): string | null {
  if (!images) return null;
  const image = mainImage(images);
  return Object.keys(images).find((s) => images[s] === image) ?? null;
}

/**
 * The exact image a run of `service` runs: the one its current deployment recorded, as the engine
 * has it (its id), never a tag looked up again. The service's live container says which id that
 * deployment ran when the tag has moved since. (When deployments record image digests per
 * service, this is where a run reads them first.)
 */
export async function deploymentImage(
  engine: Engine,
  dep: Pick<Deployment, 'images'>,
  service: string,
  liveImageId: string | null,
): Promise<string> {
  const recorded = dep.images?.[service];
  if (!recorded) throw new TargetError(`the current deployment has no service "${service}"`, 'unavailable');
  if (liveImageId) return liveImageId;
  try {
    return (await guard(engine, () => engine.docker.getImage(recorded).inspect())).Id;
  } catch (e) {
    if (isNotFound(e))
      throw new TargetError(
        `image ${recorded} of the current deployment is no longer on the engine`,
        'unavailable',
      );
    throw e;
  }
}

/** The current deployment and the service a run uses; 409 (TargetError) when there is none. */
export async function runDeployment(
  env: Pick<Services, 'db'>,
  appId: string,
  service: string | null,
): Promise<{ dep: Deployment; service: string }> {
  const dep = await currentDeployment(env.db, appId);
  if (!dep) throw new TargetError('the app has never been deployed successfully', 'never_deployed');
  const name = service ?? mainService(dep.images);
  if (!name || !dep.images?.[name])
    throw new TargetError(
      `the current deployment has no service "${service ?? ''}" (services: ${Object.keys(dep.images ?? {}).join(', ') || 'none'})`,
      'unavailable',
    );
  return { dep, service: name };
}

/** The template of a job's or a command's run: the live service of the current deployment. */
export async function liveTarget(
  env: Pick<Services, 'db' | 'engine' | 'config'>,
  app: Pick<App, 'id' | 'name'>,
  service: string | null,
): Promise<Target> {
  const { dep, service: name } = await runDeployment(env, app.id, service);
  if (env.config.cluster.mode === 'swarm') {
    const live = await liveServiceSpec(env.engine, app.name, name);
    if (!live) throw new TargetError(`service "${name}" has no swarm service to run from`, 'unavailable');
    return { kind: 'swarm', spec: live.spec, app: app.name, service: name, deploymentId: dep.id };
  }
  const mine = await listAppContainers(env.engine, app.name, { service: name, deployment: dep.id });
  const c = mine.find((x) => x.state === 'running') ?? mine.at(-1);
  if (!c)
    throw new TargetError(
      `service "${name}" has no container of its current deployment ${dep.id}; deploy the app again`,
      'unavailable',
    );
  const info = await guard(env.engine, () => env.engine.docker.getContainer(c.id).inspect());
  const template = templateFromContainer(info, app.name);
  template.image = await deploymentImage(env.engine, dep, name, info.Image);
  return { kind: 'host', template };
}

/** A TargetError as the API answers it (409: nothing to run yet, or not now). */
export function targetConflict(e: unknown): unknown {
  return e instanceof TargetError ? conflict(`Cannot run: ${e.message}`) : e;
}
