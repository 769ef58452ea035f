// Container-level building blocks. stackUp composes them one way (replace in place); the
// deploy pipeline composes them blue/green: create next to the old ones without the service
// alias, wait until ready, then move the alias with setAliases and remove the old containers.
import type Docker from 'dockerode';
import type { Engine } from './engine.js';
import { EngineConflictError, StackError, guard, isNotFound, statusOf } from './engine.js';
import {
  LABEL_APP,
  LABEL_DEPLOYMENT,
  LABEL_INDEX,
  LABEL_RUN,
  LABEL_SERVICE,
  containerName,
  imageTag,
} from './names.js';
import type { PlanService, StackPlan } from './plan.js';
import type { DependsCondition } from '../compose/index.js';
import { checkBindsBeforeCreate, verifyCreatedMounts } from './binds.js';
import { isOwned, ownedFilter, ownerLabels } from './owner.js';
import { sleep } from '../util/sleep.js';

export interface AppContainer {
  id: string;
  name: string;
  app: string;
  service: string;
  deployment: string;
  index: number;
  state: string;
  /** Docker's status text, e.g. "Up 3 minutes (healthy)". */
  statusText: string;
  health: 'healthy' | 'unhealthy' | 'starting' | 'none';
  image: string;
  created: number;
  ports: Docker.Port[];
  /** Network name -> aliases the container holds there. */
  networks: Record<string, string[]>;
}

export function healthFromStatus(status: string): AppContainer['health'] {
  if (status.includes('(healthy)')) return 'healthy';
  if (status.includes('(unhealthy)')) return 'unhealthy';
  if (status.includes('(health: starting)')) return 'starting';
  return 'none';
}

/**
 * Every container of the app (of every app for null) that this instance made: its labels name the
 * app, and its instance label (or adopted id) says it is ours; the same labels on a container
 * made by anyone else do not make it the app's. One-off containers (job runs, commands, release
 * commands) are the app's too, but no service's: listed only with `runs: true`.
 */
export async function listAppContainers(
  engine: Engine,
  app: string | null,
  filter: { service?: string; deployment?: string; runs?: boolean } = {},
): Promise<AppContainer[]> {
  const labels = [app === null ? LABEL_APP : `${LABEL_APP}=${app}`];
  if (filter.service) labels.push(`${LABEL_SERVICE}=${filter.service}`);
  if (filter.deployment) labels.push(`${LABEL_DEPLOYMENT}=${filter.deployment}`);
  return guard(engine, async () => {
    const list = await engine.docker.listContainers({ all: true, filters: ownedFilter(engine, labels) });
    return list
      .filter(
        (c) =>
          isOwned(engine, 'container', c.Id, c.Labels) &&
          (app === null ? !!c.Labels?.[LABEL_APP] : c.Labels?.[LABEL_APP] === app) &&
          (filter.runs || !c.Labels?.[LABEL_RUN]),
      )
      .map((c) => ({
        id: c.Id,
        name: (c.Names[0] ?? '').replace(/^\//, ''),
        app: c.Labels[LABEL_APP]!,
        service: c.Labels[LABEL_SERVICE] ?? '',
        deployment: c.Labels[LABEL_DEPLOYMENT] ?? '',
        index: Number(c.Labels[LABEL_INDEX] ?? 0),
        state: c.State,
        statusText: c.Status,
        health: healthFromStatus(c.Status),
        image: c.Image,
        created: c.Created,
        ports: c.Ports ?? [],
        networks: Object.fromEntries(
          Object.entries(c.NetworkSettings?.Networks ?? {}).map(([n, info]) => [
            n,
            (info.Aliases as string[] | null) ?? [],
          ]),
        ),
      }))
      .sort((a, b) => a.created - b.created || a.index - b.index);
  });
}

export interface CreateOptions {
  deploymentId: string;
  /** Container number; default: the lowest whose name no container on the host uses. */
  index?: number;
  /**
   * Aliases on the service's networks. Default: the service name plus its compose aliases.
   * Pass [] to start a container nobody reaches by the service name yet (blue/green).
   */
  aliases?: string[];
  /** Image to run; default the plan's image, else the deployment's build tag. */
  image?: string;
  /** Extra labels (e.g. a config hash); svc.* labels cannot be overridden. */
  labels?: Record<string, string>;
}

export function planService(plan: StackPlan, service: string): PlanService {
  const s = plan.services.find((x) => x.name === service);
  if (!s) throw new StackError(`service "${service}" is not in the plan`, service);
  return s;
}

export function serviceImage(plan: StackPlan, svc: PlanService, deploymentId: string): string {
  return svc.image ?? imageTag(plan.app, svc.name, deploymentId);
}

/** Creates (does not start) a container for one service of the plan. */
export async function createServiceContainer(
  engine: Engine,
  plan: StackPlan,
  service: string,
  opts: CreateOptions,
): Promise<{ id: string; name: string }> {
  const svc = planService(plan, service);
  const image = opts.image ?? serviceImage(plan, svc, opts.deploymentId);
  return guard(engine, async () => {
    let imageConfig: { Cmd?: string[] | null; Entrypoint?: string[] | string | null } | undefined;
    try {
      imageConfig = (await engine.docker.getImage(image).inspect()).Config;
    } catch (e) {
      if (!isNotFound(e)) throw e;
      throw new StackError(
        `image "${image}" for service "${service}" is not present on the engine${svc.image ? ' (pull it or build it first)' : ' (build it first)'}`,
        service,
      );
    }
    // The engine's own answer would be "No command specified": say which image and what to do.
    const has = (v: unknown) => (Array.isArray(v) ? v.length > 0 : typeof v === 'string' && v.length > 0);
    if (
      !has(svc.config.Cmd) &&
      !has(svc.config.Entrypoint) &&
      !has(imageConfig?.Cmd) &&
      !has(imageConfig?.Entrypoint)
    ) {
      throw new StackError(noCommand(image, service));
    }
    const networkMode = await networkModeFor(engine, plan, svc);
    const first = svc.networks[0];
    const aliasesFor = (composeAliases: string[]) => opts.aliases ?? [svc.name, ...composeAliases];
    const labels = {
      ...svc.labels,
      ...opts.labels,
      ...ownerLabels(engine),
      [LABEL_APP]: plan.app,
      [LABEL_SERVICE]: svc.name,
      [LABEL_DEPLOYMENT]: opts.deploymentId,
    };
    for (let attempt = 0; attempt < 20; attempt++) {
      const index = opts.index ?? (await freeIndex(engine, plan.app, svc.name));
      const name = containerName(plan.app, svc.name, index);
      try {
        return await createChecked(engine, svc.name, {
          body: {
            ...svc.config,
            name,
            Image: image,
            Env: svc.env,
            Labels: { ...labels, [LABEL_INDEX]: String(index) },
            HostConfig: { ...svc.config.HostConfig, NetworkMode: networkMode },
            ...(first && !svc.networkMode
              ? {
                  NetworkingConfig: {
                    EndpointsConfig: { [first.name]: { Aliases: aliasesFor(first.aliases) } },
                  },
                }
              : {}),
          },
          more: svc.networkMode
            ? []
            : svc.networks.slice(1).map((n) => ({ name: n.name, aliases: aliasesFor(n.aliases) })),
        });
      } catch (e) {
        if (statusOf(e) === 400 && /no command specified/i.test(String((e as Error).message)))
          throw new StackError(noCommand(image, service));
        // Another container took the name between our look and our create: try the next one.
        if (statusOf(e) === 409 && opts.index === undefined) continue;
        if (statusOf(e) === 409) throw new EngineConflictError(`container name "${name}" is taken`);
        throw e;
      }
    }
    throw new EngineConflictError(`no free container name for service "${service}"`);
  });
}

/**
 * The network a service's container starts in: its first network, `none`, or the namespace of the
 * running container of the service it shares one with (network_mode: service:X).
 */
export async function networkModeFor(engine: Engine, plan: StackPlan, svc: PlanService): Promise<string> {
  if (svc.networkMode && 'none' in svc.networkMode) return 'none';
  if (svc.networkMode) {
    const peers = (await listAppContainers(engine, plan.app, { service: svc.networkMode.service })).filter(
      (c) => c.state === 'running',
    );
    const peer = peers.at(-1);
    if (!peer)
      throw new StackError(
        `service "${svc.name}" shares the network of "${svc.networkMode.service}", which is not running`,
        svc.name,
      );
    return `container:${peer.id}`;
  }
  return svc.networks[0]!.name;
}

/**
 * Every container the control plane makes for an app goes through here, service containers and
 * one-off ones alike: binds checked before the create and verified after it (the engine resolves
 * bind sources when the container starts: what it recorded must be exactly what was planned and
 * checked, or the container never starts), then the other networks joined. Anything that fails
 * removes the container.
 */
export async function createChecked(
  engine: Engine,
  service: string,
  spec: { body: Docker.ContainerCreateOptions; more: { name: string; aliases: string[] }[] },
): Promise<{ id: string; name: string }> {
  await checkBindsBeforeCreate(engine, service, spec.body);
  const created = await engine.docker.createContainer(spec.body);
  try {
    const mismatch = await verifyCreatedMounts(engine, created.id, service, spec.body);
    if (mismatch)
      throw new StackError(`${service}: mount check failed, container removed: ${mismatch}`, service);
    for (const n of spec.more)
      await engine.docker
        .getNetwork(n.name)
        .connect({ Container: created.id, EndpointConfig: { Aliases: n.aliases } });
  } catch (e) {
    await created.remove({ force: true, v: true }).catch(() => {});
    throw e;
  }
  return { id: created.id, name: spec.body.name! };
}

function noCommand(image: string, service: string): string {
  return `service "${service}" cannot start: image "${image}" has no command (neither CMD nor ENTRYPOINT); give the service a "command" in the compose file, or use an image that defines one`;
}

async function freeIndex(engine: Engine, app: string, service: string): Promise<number> {
  const prefix = containerName(app, service, 0).slice(0, -1);
  // Names of every container on the host (not only ours): a stray one may hold a name we'd pick.
  const all = await engine.docker.listContainers({ all: true, filters: { name: [prefix] } });
  const used = new Set(all.flatMap((c) => c.Names.map((n) => n.replace(/^\//, ''))));
  let i = 1;
  while (used.has(containerName(app, service, i))) i++;
  return i;
}

/**
 * For containers addressed by name or id (a database's, a scratch server): refuses one this
 * instance did not make, so a look-alike that took a freed name is never exec'd into or written to.
 */
export async function assertOwnedContainer(engine: Engine, ref: string): Promise<void> {
  const info = await guard(engine, () => engine.docker.getContainer(ref).inspect());
  if (!isOwned(engine, 'container', info.Id, info.Config?.Labels))
    throw new EngineConflictError(`container ${ref} was not made by this control plane`);
}

export async function startContainer(engine: Engine, id: string): Promise<void> {
  await guard(engine, async () => {
    try {
      await engine.docker.getContainer(id).start();
    } catch (e) {
      if (statusOf(e) !== 304) throw e; // already started
    }
  });
}

export async function stopContainer(engine: Engine, id: string, timeoutSeconds?: number): Promise<void> {
  await guard(engine, async () => {
    try {
      await engine.docker.getContainer(id).stop(timeoutSeconds === undefined ? {} : { t: timeoutSeconds });
    } catch (e) {
      if (statusOf(e) !== 304 && !isNotFound(e)) throw e;
    }
  });
}

export async function removeContainer(engine: Engine, id: string): Promise<void> {
  await guard(engine, async () => {
    try {
      await engine.docker.getContainer(id).remove({ force: true, v: true });
    } catch (e) {
      // 409 "removal already in progress" counts as gone: retries converge.
      if (!isNotFound(e) && statusOf(e) !== 409) throw e;
    }
  });
}

/** By name or id; one this instance did not make under that name is left alone. */
export async function removeOwnedContainer(engine: Engine, name: string): Promise<void> {
  await guard(engine, async () => {
    try {
      const info = await engine.docker.getContainer(name).inspect();
      if (!isOwned(engine, 'container', info.Id, info.Config?.Labels)) return;
      await engine.docker.getContainer(info.Id).remove({ force: true, v: true });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  });
}

/** Removes every container of one deployment (a failed or interrupted one). */
export async function removeDeploymentContainers(
  engine: Engine,
  app: string,
  deploymentId: string,
): Promise<string[]> {
  const list = await listAppContainers(engine, app, { deployment: deploymentId });
  for (const c of list) await removeContainer(engine, c.id);
  return list.map((c) => c.name);
}

/**
 * Replaces the aliases a container holds on each of the service's networks. Docker cannot edit
 * aliases in place, so this disconnects and reconnects; do it on a container that is not yet
 * the one serving (the new one before it takes over, or the old one after).
 */
export async function setAliases(
  engine: Engine,
  plan: StackPlan,
  service: string,
  containerId: string,
  aliases: string[] | 'default',
): Promise<void> {
  const svc = planService(plan, service);
  await guard(engine, async () => {
    const info = await engine.docker.getContainer(containerId).inspect();
    if (
      !isOwned(engine, 'container', info.Id, info.Config.Labels) ||
      info.Config.Labels?.[LABEL_APP] !== plan.app
    )
      throw new EngineConflictError(`container ${containerId} does not belong to app "${plan.app}"`);
    for (const n of svc.networks) {
      const net = engine.docker.getNetwork(n.name);
      if (info.NetworkSettings.Networks[n.name])
        await net.disconnect({ Container: containerId, Force: true });
      await net.connect({
        Container: containerId,
        EndpointConfig: { Aliases: aliases === 'default' ? [svc.name, ...n.aliases] : aliases },
      });
    }
  });
}

export interface WaitOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  pollMs?: number;
}

/**
 * Waits until a container meets a depends_on condition: started (running), healthy (its
 * healthcheck passes), or completed successfully (exited 0). Fails fast on exit/unhealthy.
 */
export async function waitForCondition(
  engine: Engine,
  id: string,
  condition: DependsCondition,
  opts: WaitOptions = {},
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const pollMs = opts.pollMs ?? 500;
  for (;;) {
    opts.signal?.throwIfAborted();
    const info = await guard(engine, () => engine.docker.getContainer(id).inspect());
    const name = info.Name.replace(/^\//, '');
    const st = info.State;
    if (condition === 'service_completed_successfully') {
      if (st.Status === 'exited' || st.Status === 'dead') {
        if (st.ExitCode === 0) return;
        throw new StackError(`${name} exited with code ${st.ExitCode}`);
      }
    } else {
      if (st.Status === 'exited' || st.Status === 'dead')
        throw new StackError(`${name} exited with code ${st.ExitCode}${st.Error ? `: ${st.Error}` : ''}`);
      if (condition === 'service_started' && st.Running) return;
      if (condition === 'service_healthy') {
        const h = st.Health?.Status;
        if (!h) throw new StackError(`${name} has no healthcheck to wait for`);
        if (h === 'healthy') return;
        if (h === 'unhealthy') {
          const last = st.Health?.Log?.at(-1);
          throw new StackError(
            `${name} is unhealthy${last ? `: exit ${last.ExitCode}, ${String(last.Output).trim().slice(0, 300)}` : ''}`,
          );
        }
      }
    }
    if (Date.now() > deadline)
      throw new StackError(
        `${name} did not reach ${condition} within ${Math.round((opts.timeoutMs ?? 120_000) / 1000)} s`,
      );
    await sleep(pollMs, opts.signal);
  }
}
