// The release command: once per deployment, after the build and before any new container takes
// traffic, in a one-off of the new image with the new environment (the main service's, from this
// deployment's plan). Its output goes to the deployment log as `release` lines and to its run's
// log; a non-zero exit or a timeout fails the deployment, and the running version keeps serving.
// A rollback never runs it (the pipeline does not call this for one).
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import type { Deployment } from '../apps/deployment.js';
import {
  StackError,
  ensureNetworks,
  ensureVolumes,
  planService,
  templateFromPlan,
  type StackPlan,
} from '../docker/index.js';
import { ensureOverlayNetworks, serviceSpec } from '../cluster/spec.js';
import { clusterSettings } from '../cluster/settings.js';
import { serviceConstraints } from '../cluster/oneoff.js';
import { deploymentImage, mainService, type Target } from '../jobs/target.js';
import { runRow } from '../jobs/jobs.js';
import { insertRun } from '../jobs/store.js';
import type { DeployLog } from './log.js';

export interface ReleaseStep {
  app: App;
  deployment: Deployment;
  plan: StackPlan;
  /** Image per service, as the engine (or on a swarm, the nodes) will run them. */
  images: Record<string, string>;
  log: DeployLog;
  signal: AbortSignal;
}

async function releaseTarget(env: Services, step: ReleaseStep, service: string): Promise<Target> {
  const { plan, deployment: dep } = step;
  const svc = planService(plan, service);
  if (env.config.cluster.mode === 'swarm') {
    await ensureOverlayNetworks(env.engine, plan);
    const spec = serviceSpec(env.engine, plan, svc, {
      deploymentId: dep.id,
      image: step.images[service]!,
      replicas: 1,
      constraints: serviceConstraints((await clusterSettings(env.db, step.app.id)).get(service)),
    });
    return { kind: 'swarm', spec, app: plan.app, service, deploymentId: dep.id };
  }
  await ensureNetworks(env.engine, plan);
  await ensureVolumes(env.engine, plan);
  const image = await deploymentImage(env.engine, { images: step.images }, service, null);
  return {
    kind: 'host',
    template: await templateFromPlan(env.engine, plan, svc, { image, deploymentId: dep.id }),
  };
}

/** Runs the app's release command, if it has one; throws (failing the deployment) unless it exits 0. */
export async function runRelease(env: Services, step: ReleaseStep): Promise<void> {
  const { app, deployment: dep, log, signal } = step;
  const command = app.release_command;
  if (!command?.length) return;
  const say = (line: string) => log.write(line, 'deploy');
  const service = mainService(step.images);
  if (!service) throw new StackError('the release command has no service to run in');
  const target = await releaseTarget(env, step, service);
  const row = runRow(
    app.id,
    {
      jobId: null,
      trigger: 'release',
      command,
      service,
      deploymentId: dep.id,
      timeoutS: app.release_timeout_s,
    },
    env.now(),
  );
  await insertRun(env.db, row);
  say(
    `release command ${JSON.stringify(command)}: run ${row.id} in a one-off of service "${service}" (the new image and environment; at most ${app.release_timeout_s} s)`,
  );
  const cancel = () => void env.runs.cancel(row.id, 'the deployment was canceled or stopped');
  signal.addEventListener('abort', cancel, { once: true });
  let run;
  try {
    run = await env.runs.run(row, target, {
      app: { id: app.id, name: app.name },
      job: null,
      unbounded: true,
      onLine: (line, stream) => {
        if (stream !== 'system') log.write(line, 'release');
      },
    });
  } finally {
    signal.removeEventListener('abort', cancel);
  }
  signal.throwIfAborted();
  if (run.status !== 'succeeded')
    throw new StackError(`release command ${run.reason ?? run.status}; the running version keeps serving`);
  say('release command succeeded');
}
