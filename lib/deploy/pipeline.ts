// One deployment, start to finish: source (clone/fetch, or a rollback's kept images, or an
// image app's image) -> build -> blue/green rollout with health gates. Status changes go
// through `setStatus`; every step writes to the deployment log. Throws on failure or abort:
// the caller decides the final status and cleans up what this deployment left.
import { realpath, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Services } from '../http/handler.js';
import { DEFAULT_DRAIN_S, type App } from '../apps/model.js';
import { noGitAuth } from '../apps/probe.js';
import { resolveEnv } from '../apps/env.js';
import { patchServiceSettings, serviceSettings } from '../apps/store.js';
import { parseCompose, singleServiceModel, type ComposeModel } from '../compose/index.js';
import {
  StackError,
  assertBuildAllowed,
  buildImage,
  buildLabels,
  imageTag,
  planStack,
  type BindTable,
  type PlanService,
  type StackPlan,
} from '../docker/index.js';
import { redactUrl } from '../git/index.js';
import type { DeployLog } from './log.js';
import type { DeploySpec, Deployment, DeployStatus } from '../apps/deployment.js';
import type { TransitionPatch } from './store.js';
import { checkout, appWorkDir } from './workdir.js';
import { inlineSpec } from './source.js';
import { prepareBinds, pruneDeploymentCopies, relativeBinds, sourceCopy } from './mounts.js';
import { pullServiceImages } from '../images/pull.js';
import { exactImages } from '../images/rollback.js';
import { pullPolicyOf, settleImages } from '../images/deploy.js';
import { rollout } from './bluegreen.js';
import { runRelease } from './release.js';
import { switchToContainers } from '../proxy/deploy.js';
import type { PipelineOptions } from './types.js';
import { GENERATED_DOCKERFILE, generatePlan, planLines, resolveBuild } from './generated.js';
import { mapDockerfileImages } from '../buildplan/images.js';
import type { BuildSlot, BuildSlots } from './buildslots.js';
import type { BuildLimits } from '../apps/model.js';
import { clusterRollout } from '../cluster/rollout.js';
import { clusterRegistry, registryAuth } from '../cluster/registry.js';
import { publishImages } from '../cluster/images.js';
import { clusterSettings, patchClusterSettings } from '../cluster/settings.js';
import { applyRepoConfig, readRepoConfig, releaseCommandOf, type LoadedConfig } from '../appspec/deploy.js';

export type { PipelineOptions };

export interface PipelineRun {
  env: Services;
  app: App;
  deployment: Deployment;
  /** The commit to deploy instead of the ref's head (must be on the ref's history); null: the head. */
  pin?: string | null;
  /** The spec a rollback re-plans (read from the deployment it rolls back to). */
  spec: DeploySpec | null;
  log: DeployLog;
  signal: AbortSignal;
  setStatus: (status: DeployStatus, patch?: TransitionPatch) => Promise<void>;
  opts: PipelineOptions;
  /** Shared by every deployment of the process: builds at once (SVC_BUILD_CONCURRENCY); none: unbounded. */
  buildSlots?: BuildSlots;
}

async function takeSlot(run: PipelineRun, say: (line: string) => void): Promise<BuildSlot> {
  const slots = run.buildSlots;
  if (!slots) return { building: 1, release: () => {} };
  const slot = await slots.acquire(run.signal, (n) =>
    say(`waiting for a build slot: ${n} of ${slots.size} in use (SVC_BUILD_CONCURRENCY)`),
  );
  say(`build slot taken: ${slot.building} of ${slots.size} building now`);
  return slot;
}

function describeLimits(l: BuildLimits): string {
  const parts = [
    l.memory_mb && `memory ${l.memory_mb} MiB`,
    l.cpus && `${l.cpus} CPUs`,
    l.timeout_s && `time ${l.timeout_s} s`,
  ];
  return parts.filter(Boolean).join(', ');
}

/**
 * The generated image listens on PORT (set in its Dockerfile); the container gets the same value,
 * unless the app's own env sets PORT, which the operator then answers for.
 */
function withPort(
  plan: StackPlan,
  port: number,
  appEnv: Record<string, string>,
  say: (line: string) => void,
): void {
  const svc = plan.services[0];
  if (!svc) return;
  if (appEnv.PORT !== undefined && appEnv.PORT !== String(port)) {
    say(`the app's env sets PORT=${appEnv.PORT}; the plan's port ${port} is what the image exposes`);
    return;
  }
  svc.env = [...svc.env.filter((e) => !e.startsWith('PORT=')), `PORT=${port}`];
}

export async function runPipeline(
  run: PipelineRun,
): Promise<{ images: Record<string, string>; replaced: string[]; retire: () => Promise<string[]> }> {
  const { env, app, deployment: dep, log, signal, opts } = run;
  const say = (line: string) => log.write(line, 'deploy');
  const appEnv = await resolveEnv(env.db, env.sealer, app.id);
  const repoDir = join(appWorkDir(opts.workRoot, app.id), 'repo');
  let spec: DeploySpec;
  let images: Record<string, string> = {};
  let workdir: string | undefined;
  let plan: StackPlan;
  // The repository's svc.yaml of this commit (git apps), read before anything changes.
  let cfg: LoadedConfig | null = null;
  const swarm = env.config.cluster.mode === 'swarm';
  // On a swarm every node pulls: images only this engine has go to the registry first.
  let local: Record<string, string> = {};
  const publish = async (refs: Record<string, string>) => {
    local = { ...refs };
    if (!swarm) return refs;
    return publishImages(env.engine, refs, await clusterRegistry(env), say, signal, await registryAuth(env));
  };

  const pull = (line: string) => log.write(line, 'pull');
  const policy = () => pullPolicyOf(app.source.type === 'git' ? {} : app.source, dep.pull);
  // The exact image of every service (recorded for rollbacks), held by a keep tag on one host.
  const settle = (refs: Record<string, string>) =>
    settleImages(env.engine, { app: app.name, deploymentId: dep.id, images: refs, local, swarm });

  const prune = () =>
    pruneDeploymentCopies(env.engine, opts.workRoot, app.id, opts.keepImages ?? 5, dep.id).catch((e) => {
      say(`could not remove old copies of the repository: ${(e as Error).message}`);
      return [];
    });
  if (dep.trigger === 'rollback') {
    if (!run.spec || !dep.images)
      throw new StackError('the deployment to roll back to has no recorded images');
    spec = run.spec;
    images = dep.images;
    say(
      `rollback to deployment ${dep.rollback_of}${dep.commit ? ` (commit ${dep.commit.slice(0, 12)})` : ''}: reusing its images, no clone, no build`,
    );
    // Exactly the digests that ran then, whatever the tags say now. On a swarm the recorded
    // references are the registry's, by digest: the nodes pull them from there.
    if (!swarm) images = await exactImages(env.engine, images, dep.image_digests, { log: pull, signal });
    // That deployment's own copy of the repository, when it made one, has the right files.
    const kept = dep.rollback_of ? sourceCopy(opts.workRoot, app.id, dep.rollback_of) : null;
    workdir = kept && (await isDir(kept)) ? kept : (await isDir(repoDir)) ? repoDir : undefined;
    plan = await makePlan(env, app, spec, appEnv, workdir, {
      workRoot: opts.workRoot,
      deploymentId: dep.id,
      files: kept && workdir === kept ? kept : null,
      log: say,
    });
    await prune();
    images = await publish(images);
    await run.setStatus('deploying', { ...(swarm ? { images } : {}), imageDigests: await settle(images) });
  } else if (app.source.type === 'image') {
    spec = { kind: 'image', image: app.source.image };
    say(`image app: running ${app.source.image} (no clone, no build)`);
    plan = await makePlan(env, app, spec, appEnv, undefined, null);
    images = { [plan.services[0]!.name]: app.source.image };
    const pulled = await pullServiceImages(env.engine, images, { policy: policy(), log: pull, signal });
    images = await publish(images);
    await run.setStatus('deploying', { images, spec, pulled, imageDigests: await settle(images) });
  } else if (app.source.type === 'compose') {
    spec = inlineSpec(app.source);
    say('inline compose file: no clone, no build');
    plan = await makePlan(env, app, spec, appEnv, undefined, null);
    for (const svc of plan.services) images[svc.name] = svc.image!;
    const pulled = await pullServiceImages(env.engine, images, { policy: policy(), log: pull, signal });
    images = await publish(images);
    await run.setStatus('deploying', { images, spec, pulled, imageDigests: await settle(images) });
  } else {
    const src = app.source;
    const ref = dep.ref ?? src.branch;
    await run.setStatus('cloning');
    say(
      `fetching ${ref} from ${redactUrl(src.repo_url)}${run.pin ? ` to deploy its commit ${run.pin}` : ''}`,
    );
    const gitAuth = env.gitAuth ?? noGitAuth;
    const co = await gitAuth(app, (gitEnv) =>
      checkout({
        workRoot: opts.workRoot,
        appId: app.id,
        deploymentId: dep.id,
        url: src.repo_url,
        ref,
        commit: run.pin ?? null,
        env: gitEnv,
        signal,
        timeoutMs: opts.cloneTimeoutMs,
        maxBytes: opts.cloneMaxBytes,
        log: say,
      }),
    );
    workdir = co.dir;
    say(
      `commit ${co.commit.slice(0, 12)} ${co.subject}${co.fresh ? ' (fresh clone)' : ' (fetched into the working copy)'}`,
    );
    // The repository's svc.yaml, checked before anything changes: the file wins for what it names.
    const repo = await readRepoConfig(co.dir, src, appEnv);
    cfg = repo.cfg;
    const resolved = await resolveBuild(co.dir, repo.buildSource, appEnv);
    // A generated build: the plan first (what will be built and why), then the same path as a Dockerfile.
    let generated: { text: string; port: number } | null = null;
    if (resolved.kind === 'generated') {
      const bp = await generatePlan(co.dir, resolved.override);
      for (const line of planLines(bp, resolved.setting)) log.write(line, 'plan');
      spec = { kind: 'dockerfile', path: GENERATED_DOCKERFILE };
      generated = { text: mapDockerfileImages(bp.dockerfile, env.config.imageMap), port: bp.port };
      say(`building the generated Dockerfile as service "app"`);
      // The plan's port becomes the service's unless the operator set one: the health gate probes
      // it, and the proxy routes the app's automatic host to it.
      if (!(await serviceSettings(env.db, app.id)).get('app')?.port) {
        await patchServiceSettings(env.db, app.id, 'app', { port: bp.port });
        say(`service "app" listens on port ${bp.port}, the plan's (set a port on the service to change it)`);
      }
    } else {
      spec = resolved.spec;
      say(
        resolved.kind === 'compose'
          ? `compose file ${spec.path}: services ${resolved.services.join(', ')}`
          : `no compose file: building ${spec.path} as service "app"`,
      );
    }
    plan = await makePlan(env, app, spec, appEnv, workdir, {
      workRoot: opts.workRoot,
      deploymentId: dep.id,
      files: co.dir,
      log: say,
    });
    if (generated) withPort(plan, generated.port, appEnv, say);
    const config = await applyRepoConfig(env, app, repo, plan, say);
    await prune();
    await run.setStatus('building', { commit: co.commit, commitSubject: co.subject, spec, config });
    // Every Dockerfile passes the policy before the first build starts: a refused one builds nothing.
    const root = await realpath(co.dir);
    const shown = (b: NonNullable<PlanService['build']>) =>
      generated
        ? `${GENERATED_DOCKERFILE} (generated)`
        : relative(root, join(b.contextDir, b.dockerfile)) || b.dockerfile;
    for (const svc of plan.services) {
      if (svc.build)
        await assertBuildAllowed(env.engine, {
          contextDir: svc.build.contextDir,
          dockerfile: svc.build.dockerfile,
          args: svc.build.args,
          shown: shown(svc.build),
          text: generated?.text,
          onPull: pull,
          pullPolicy: policy(),
          signal,
        });
    }
    // The images the stack runs but does not build, before anything stops.
    const named = Object.fromEntries(plan.services.filter((v) => !v.build).map((v) => [v.name, v.image!]));
    const pulled = await pullServiceImages(env.engine, named, { policy: policy(), log: pull, signal });
    const limits = app.build_limits ?? undefined;
    if (limits && plan.services.some((svc) => svc.build)) say(`build limits: ${describeLimits(limits)}`);
    let slot: BuildSlot | null = null;
    try {
      for (const svc of plan.services) {
        if (!svc.build) {
          images[svc.name] = svc.image!;
          continue;
        }
        signal.throwIfAborted();
        slot ??= await takeSlot(run, say);
        const tag = imageTag(app.name, svc.name, dep.id);
        say(`${svc.name}: building ${tag}`);
        await buildImage(env.engine, {
          contextDir: svc.build.contextDir,
          dockerfile: svc.build.dockerfile,
          args: svc.build.args,
          target: svc.build.target,
          shown: shown(svc.build),
          tag,
          labels: buildLabels(app.name, svc.name, dep.id),
          signal,
          onLog: (line) => log.write(line, 'build'),
          generated: generated?.text,
          limits,
        });
        images[svc.name] = tag;
      }
    } finally {
      if (slot) {
        slot.release();
        say('build finished: its build slot is free');
      }
    }
    images = await publish(images);
    await run.setStatus('deploying', { images, pulled, imageDigests: await settle(images) });
  }

  // The release command, once, in the new image: before any new container takes traffic.
  const releaseApp = { ...app, release_command: releaseCommandOf(cfg, app) };
  if (dep.trigger !== 'rollback')
    await runRelease(env, { app: releaseApp, deployment: dep, plan, images, log, signal });

  return rollOut(run, plan, images, local, say);
}

/**
 * The new version takes over: a swarm service update (the proxy follows its tasks), or on one host
 * blue/green containers behind the health gate with the old ones draining.
 */
async function rollOut(
  run: PipelineRun,
  plan: StackPlan,
  images: Record<string, string>,
  local: Record<string, string>,
  say: (line: string) => void,
): Promise<{ images: Record<string, string>; replaced: string[]; retire: () => Promise<string[]> }> {
  const { env, app, deployment: dep, signal, opts } = run;
  const settings = await serviceSettings(env.db, app.id);
  if (env.config.cluster.mode === 'swarm') {
    const result = await clusterRollout(env.engine, plan, {
      deploymentId: dep.id,
      images,
      localImages: local,
      settings,
      cluster: await clusterSettings(env.db, app.id),
      pin: (service, node) => patchClusterSettings(env.db, app.id, service, { pinned_node: node }),
      signal,
      log: say,
      timeoutMs: opts.healthTimeoutMs,
      onHealthChecking: () => run.setStatus('health_checking'),
      // The nodes' agents pull the images from the cluster registry with its account.
      registryAuth: await registryAuth(env),
    });
    // The proxy follows the service's tasks by name: one sync picks up new hosts or upstreams.
    if (env.edge.proxy.enabled)
      await env.edge.proxy.sync(`deploy ${app.name}`).catch((e) => {
        say(`proxy: could not sync: ${(e as Error).message}`);
      });
    return { images, replaced: result.replaced, retire: result.retire };
  }
  const result = await rollout(env.engine, plan, {
    deploymentId: dep.id,
    images,
    settings,
    signal,
    log: say,
    gate: {
      timeoutMs: opts.healthTimeoutMs,
      settleMs: opts.settleMs,
      probe: opts.probe,
      probeImage: opts.probeImage,
    },
    onHealthChecking: () => run.setStatus('health_checking'),
    switchProxy: (created) => switchToContainers(env, app, created, say),
    // The old containers keep their open connections until these end or drain_s passed.
    drain: {
      seconds: (service) => settings.get(service)?.drain_s ?? DEFAULT_DRAIN_S,
      proxied: (addresses) => env.edge.inFlight(addresses),
    },
  });
  return { images, replaced: result.replaced, retire: result.retire };
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** Where relative binds come from: this deployment's id, and the files to copy (null: none kept). */
interface BindContext {
  workRoot: string;
  deploymentId: string;
  files: string | null;
  log: (line: string) => void;
}

async function makePlan(
  env: Services,
  app: App,
  spec: DeploySpec,
  appEnv: Record<string, string>,
  workdir: string | undefined,
  binds: BindContext | null,
): Promise<StackPlan> {
  let model: ComposeModel;
  if (spec.kind === 'compose') {
    const parsed = parseCompose(spec.text, { env: appEnv });
    const errors = parsed.findings.filter((f) => f.level === 'error');
    if (!parsed.model || errors.length)
      throw new StackError(
        `${spec.path}: ${errors.map((f) => `${f.service ? `${f.service}: ` : ''}${f.key}: ${f.message}`).join('; ') || 'cannot be parsed'}`,
      );
    model = parsed.model;
  } else if (spec.kind === 'dockerfile') model = singleServiceModel({ dockerfile: spec.path });
  else model = singleServiceModel({ image: spec.image });
  let table: BindTable | undefined;
  if (binds && relativeBinds(model).length) {
    if (!binds.files)
      throw new StackError(
        'the compose file mounts folders of the repository, and the files of that deployment are no longer kept; deploy the commit again instead',
      );
    table = await prepareBinds({
      workRoot: binds.workRoot,
      appId: app.id,
      deploymentId: binds.deploymentId,
      checkout: binds.files,
      model,
      log: binds.log,
    });
  }
  const planned = await planStack(model, {
    app: app.name,
    env: appEnv,
    workdir,
    binds: table,
    defaultHostIp: env.config.exposure === 'local' ? '127.0.0.1' : undefined,
  });
  if (!planned.ok) {
    throw new StackError(
      `the stack cannot be planned: ${planned.findings
        .filter((f) => f.level === 'error')
        .map((f) => `${f.service ? `${f.service}: ` : ''}${f.key}: ${f.message}`)
        .join('; ')}`,
    );
  }
  return planned.plan;
}
