// A one-off container (a job run, a one-off command, a release command) is a service container
// minus the traffic: the same image, environment, networks, mounts, limits, hardening and labels,
// made through the same checked create (containers.ts createChecked), but with no name on the
// network, no published port, no restart policy and no health check, and the given command in
// place of the service's. Its template comes from the plan (a release command, before the new
// version has a container) or from the service's live container (a job, which runs exactly what
// serves).
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { Engine } from './engine.js';
import { StackError, guard, isNotFound, statusOf } from './engine.js';
import {
  LABEL_APP,
  LABEL_DEPLOYMENT,
  LABEL_MANAGED,
  LABEL_RUN,
  LABEL_SERVICE,
  networkName,
} from './names.js';
import type { PlanService, StackPlan } from './plan.js';
import { createChecked, networkModeFor, removeContainer } from './containers.js';
import { isOwned, ownedFilter, ownerLabels } from './owner.js';
import { readTimestampedLines, type OutputLine } from './log-lines.js';

export type { OutputLine };

/** Everything a one-off copies from its service. */
export interface OneOffTemplate {
  app: string;
  service: string;
  deploymentId: string;
  /** An image id (`sha256:...`) or a reference present on the engine. */
  image: string;
  /** `KEY=value`, as the service's container sees them. */
  env: string[];
  user?: string;
  workingDir?: string;
  stopSignal?: string;
  stopTimeout?: number;
  /** The service's own labels (compose `labels`); the builder adds the control plane's. */
  labels: Record<string, string>;
  /** Mounts, limits and hardening (the fields of HOST_FIELDS). */
  hostConfig: Docker.HostConfig;
  /** The app networks it joins, without aliases. */
  networks: string[];
  /** `none` or `container:<id>` instead of networks. */
  networkMode?: string;
}

/** What of a service's host config a one-off keeps: its mounts, limits and hardening, never its ports. */
export const HOST_FIELDS = [
  'Mounts',
  'NanoCpus',
  'CpuShares',
  'CpuQuota',
  'CpuPeriod',
  'Memory',
  'MemorySwap',
  'MemoryReservation',
  'PidsLimit',
  'CapAdd',
  'CapDrop',
  'ExtraHosts',
  'Tmpfs',
  'Init',
  'ReadonlyRootfs',
  'ShmSize',
  'Sysctls',
  'SecurityOpt',
  'Ulimits',
  'LogConfig',
] as const satisfies ReadonlyArray<keyof Docker.HostConfig>;

function keepHost(hc: Docker.HostConfig | undefined): Docker.HostConfig {
  const out: Record<string, unknown> = {};
  for (const k of HOST_FIELDS) {
    const v = hc?.[k];
    if (v === undefined || v === null || v === 0 || v === '' || (Array.isArray(v) && !v.length)) continue;
    out[k] = v;
  }
  return out as Docker.HostConfig;
}

/** A release command's template: the new version's service from the plan, before it has a container. */
export async function templateFromPlan(
  engine: Engine,
  plan: StackPlan,
  svc: PlanService,
  opts: { image: string; deploymentId: string },
): Promise<OneOffTemplate> {
  const mode = svc.networkMode ? await networkModeFor(engine, plan, svc) : undefined;
  const c = svc.config;
  return {
    app: plan.app,
    service: svc.name,
    deploymentId: opts.deploymentId,
    image: opts.image,
    env: svc.env,
    ...(c.User ? { user: c.User } : {}),
    ...(c.WorkingDir ? { workingDir: c.WorkingDir } : {}),
    ...(c.StopSignal ? { stopSignal: c.StopSignal } : {}),
    ...(c.StopTimeout !== undefined ? { stopTimeout: c.StopTimeout } : {}),
    labels: svc.labels,
    hostConfig: keepHost(c.HostConfig),
    networks: mode ? [] : svc.networks.map((n) => n.name),
    ...(mode ? { networkMode: mode } : {}),
  };
}

/**
 * A job's template: the service's container of the current deployment as the engine recorded it
 * (image id, environment, mounts, limits). Only the app's own networks are joined.
 */
export function templateFromContainer(info: Docker.ContainerInspectInfo, app: string): OneOffTemplate {
  const labels = info.Config.Labels ?? {};
  const own = Object.fromEntries(
    Object.entries(labels).filter(([k]) => !k.startsWith('svc.') && k !== LABEL_MANAGED),
  );
  const mode = info.HostConfig.NetworkMode ?? '';
  const appNet = (n: string) => n === networkName(app) || n.startsWith(`${networkName(app)}_`);
  const special = mode === 'none' || mode.startsWith('container:');
  return {
    app,
    service: labels[LABEL_SERVICE] ?? '',
    deploymentId: labels[LABEL_DEPLOYMENT] ?? '',
    image: info.Image,
    env: info.Config.Env ?? [],
    ...(info.Config.User ? { user: info.Config.User } : {}),
    ...(info.Config.WorkingDir ? { workingDir: info.Config.WorkingDir } : {}),
    ...((info.Config as { StopSignal?: string }).StopSignal
      ? { stopSignal: (info.Config as { StopSignal?: string }).StopSignal }
      : {}),
    ...((info.Config as { StopTimeout?: number }).StopTimeout !== undefined
      ? { stopTimeout: (info.Config as { StopTimeout?: number }).StopTimeout }
      : {}),
    labels: own,
    hostConfig: keepHost(info.HostConfig),
    networks: special ? [] : Object.keys(info.NetworkSettings?.Networks ?? {}).filter(appNet),
    ...(special ? { networkMode: mode } : {}),
  };
}

/** Creates (does not start) the one-off container of a run. */
export async function createOneOff(
  engine: Engine,
  tpl: OneOffTemplate,
  run: { id: string; name: string; command: string[] },
): Promise<{ id: string; name: string }> {
  if (!tpl.networkMode && !tpl.networks.length)
    throw new StackError(`service "${tpl.service}" is on none of the app's networks`, tpl.service);
  const [first, ...rest] = tpl.networks;
  const body: Docker.ContainerCreateOptions = {
    name: run.name,
    Image: tpl.image,
    // Exec form: exactly this argv, not through the image's entrypoint.
    Entrypoint: [''],
    Cmd: run.command,
    Env: tpl.env,
    ...(tpl.user ? { User: tpl.user } : {}),
    ...(tpl.workingDir ? { WorkingDir: tpl.workingDir } : {}),
    ...(tpl.stopSignal ? { StopSignal: tpl.stopSignal } : {}),
    ...(tpl.stopTimeout !== undefined ? { StopTimeout: tpl.stopTimeout } : {}),
    Tty: false,
    OpenStdin: false,
    Healthcheck: { Test: ['NONE'] },
    Labels: {
      ...tpl.labels,
      ...ownerLabels(engine),
      [LABEL_APP]: tpl.app,
      [LABEL_SERVICE]: tpl.service,
      [LABEL_DEPLOYMENT]: tpl.deploymentId,
      [LABEL_RUN]: run.id,
    },
    HostConfig: {
      ...tpl.hostConfig,
      NetworkMode: tpl.networkMode ?? first,
      RestartPolicy: { Name: 'no' },
      AutoRemove: false,
    },
    ...(first && !tpl.networkMode
      ? { NetworkingConfig: { EndpointsConfig: { [first]: { Aliases: [] } } } }
      : {}),
  };
  return guard(engine, () =>
    createChecked(engine, tpl.service, {
      body,
      more: tpl.networkMode ? [] : rest.map((name) => ({ name, aliases: [] })),
    }),
  );
}

export interface RunContainerState {
  id: string;
  running: boolean;
  /** Null while it runs or before it started. */
  exitCode: number | null;
  oomKilled: boolean;
  startedAt: string | null;
}

/** The run's container as the engine knows it; null when it is gone or not this run's. */
export async function runContainerState(
  engine: Engine,
  id: string,
  runId: string,
): Promise<RunContainerState | null> {
  try {
    const info = await guard(engine, () => engine.docker.getContainer(id).inspect());
    if (
      !isOwned(engine, 'container', info.Id, info.Config.Labels) ||
      info.Config.Labels?.[LABEL_RUN] !== runId
    )
      return null;
    const st = info.State;
    const started = st.StartedAt && !st.StartedAt.startsWith('0001') ? st.StartedAt : null;
    return {
      id: info.Id,
      running: st.Running || st.Restarting,
      exitCode: !st.Running && started ? st.ExitCode : null,
      oomKilled: st.OOMKilled,
      startedAt: started,
    };
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

/** Every one-off container this instance made, with its run's id. */
export async function listRunContainers(
  engine: Engine,
): Promise<Array<{ id: string; runId: string; app: string; state: string }>> {
  const list = await guard(engine, () =>
    engine.docker.listContainers({ all: true, filters: ownedFilter(engine, [LABEL_RUN]) }),
  );
  return list
    .filter((c) => isOwned(engine, 'container', c.Id, c.Labels) && !!c.Labels?.[LABEL_RUN])
    .map((c) => ({ id: c.Id, runId: c.Labels[LABEL_RUN]!, app: c.Labels[LABEL_APP] ?? '', state: c.State }));
}

/** Stops a one-off with its grace period (the engine's default when it has none). */
export async function stopRunContainer(engine: Engine, id: string, graceSeconds?: number): Promise<void> {
  await guard(engine, async () => {
    try {
      await engine.docker.getContainer(id).stop(graceSeconds === undefined ? {} : { t: graceSeconds });
    } catch (e) {
      if (statusOf(e) !== 304 && !isNotFound(e)) throw e;
    }
  });
}

export { removeContainer as removeRunContainer };

/**
 * Follows a one-off container's output from its beginning, leaving out the first `skip` lines
 * (already recorded by an earlier follow); resolves when the stream ends (the container exited,
 * the engine went away, or `signal` aborted), with how many lines it saw in all.
 */
export async function followRunOutput(
  engine: Engine,
  id: string,
  skip: number,
  onLine: (l: OutputLine) => void,
  signal: AbortSignal,
): Promise<number> {
  const raw = (await guard(engine, () =>
    engine.docker.getContainer(id).logs({ follow: true, stdout: true, stderr: true, timestamps: true }),
  )) as unknown as Readable;
  return readTimestampedLines(
    (r, o, e) => engine.docker.modem.demuxStream(r, o, e),
    raw,
    skip,
    onLine,
    signal,
  );
}
