// Compose model + app -> a stack plan: everything the engine needs to create containers,
// already in Docker's terms, so creation code has no compose knowledge left in it.
import { readFile, realpath } from 'node:fs/promises';
import type Docker from 'dockerode';
import {
  parseDotenv,
  startOrder,
  type ComposeModel,
  type DependsCondition,
  type Finding,
  type ServiceSpec,
} from '../compose/index.js';
import { resolveInside, within } from '../util/paths.js';
import { assertAppName, networkName, volumeName } from './names.js';
import { LABEL_BIND, hostPathProblem, lookupBind, showBind, type BindTable } from './binds.js';

export interface PlanNetwork {
  key: string;
  name: string;
  internal: boolean;
  labels: Record<string, string>;
}
export interface PlanVolume {
  key: string;
  name: string;
  labels: Record<string, string>;
  /** A folder of the repository to fill the volume from when it is first created (writable relative binds). */
  seed?: string;
}

export interface PlanService {
  name: string;
  /** The image to run; null when the service is built (tagged per deployment at up time). */
  image: string | null;
  build?: { contextDir: string; dockerfile: string; args: Record<string, string>; target?: string };
  /** `KEY=value`, exactly as the container will see it. */
  env: string[];
  dependsOn: { service: string; condition: DependsCondition }[];
  /** Docker network names with the compose aliases (the service name is always added). */
  networks: { name: string; aliases: string[] }[];
  /** `none`, or the service whose network namespace this one joins. */
  networkMode?: { none: true } | { service: string };
  hasHealthcheck: boolean;
  /** Fixed host ports mean two copies cannot run side by side (no blue/green). */
  publishesFixedHostPort: boolean;
  labels: Record<string, string>;
  /** Container config minus name, image, labels, env and networking. */
  config: Omit<Docker.ContainerCreateOptions, 'name' | 'Image' | 'Labels' | 'Env' | 'NetworkingConfig'>;
}

export interface StackPlan {
  app: string;
  /** The app network every service joins by default: `svc-<app>`. */
  network: string;
  networks: PlanNetwork[];
  volumes: PlanVolume[];
  /** In start order (dependencies first). */
  services: PlanService[];
}

export interface PlanOptions {
  app: string;
  /** The app's env: base layer of every service's environment (see injectAppEnv). */
  env?: Readonly<Record<string, string>>;
  /**
   * Precedence, lowest first: image < app env (when true, the default) < env_file < `environment`.
   * The compose file is the more specific statement, and it can defer to the app env with `${VAR}`.
   */
  injectAppEnv?: boolean;
  /** The app's checkout; needed for builds and env_file. It is never mounted into a container. */
  workdir?: string;
  /**
   * Where each relative bind of the model comes from (lib/deploy/mounts.ts prepares it per
   * deployment). Without it, relative binds are refused.
   */
  binds?: BindTable;
  /** Absolute host directories under which binds are allowed (as given to parseCompose). */
  allowedBindRoots?: readonly string[];
  /** Host IP for published ports that name none (e.g. 127.0.0.1 in a local-only exposure). */
  defaultHostIp?: string;
}

export type PlanResult =
  { ok: true; plan: StackPlan; findings: Finding[] } | { ok: false; findings: Finding[] };

export async function planStack(model: ComposeModel, opts: PlanOptions): Promise<PlanResult> {
  assertAppName(opts.app);
  const findings: Finding[] = [];
  const appEnv = opts.env ?? {};
  const workdir = opts.workdir ? await realpath(opts.workdir) : undefined;
  const networks: PlanNetwork[] = Object.values(model.networks).map((n) => ({
    key: n.name,
    name: networkName(opts.app, n.name),
    internal: n.internal,
    labels: n.labels,
  }));
  const volumes: PlanVolume[] = Object.values(model.volumes).map((v) => ({
    key: v.name,
    name: volumeName(opts.app, v.name),
    labels: v.labels,
  }));
  const services: PlanService[] = [];
  for (const name of startOrder(model.services)) {
    const spec = model.services[name];
    const err: Complain = (key, message) => findings.push({ level: 'error', service: name, key, message });
    const env = await serviceEnv(spec, appEnv, opts.injectAppEnv ?? true, workdir, err);
    const mounts = await planMounts(spec, opts, volumes, err);
    const build = await planBuild(spec, workdir, err);
    services.push(planService(name, spec, opts, { env, mounts, build }));
  }
  findings.push(...writableAboveOthers(services), ...unhealthyWaits(services));
  if (findings.some((f) => f.level === 'error')) return { ok: false, findings };
  return {
    ok: true,
    findings,
    plan: { app: opts.app, network: networkName(opts.app), networks, volumes, services },
  };
}

/** Records an error finding about one key of the service being planned. */
type Complain = (key: string, message: string) => void;

/** A service's mounts; a relative bind that becomes a volume adds it to `volumes`. */
async function planMounts(
  spec: ServiceSpec,
  opts: PlanOptions,
  volumes: PlanVolume[],
  err: Complain,
): Promise<Docker.MountSettings[]> {
  const mounts: Docker.MountSettings[] = [];
  for (const [i, m] of spec.volumes.entries()) {
    if (m.type === 'volume')
      mounts.push({
        Type: 'volume',
        Source: volumeName(opts.app, m.source),
        Target: m.target,
        ReadOnly: m.readOnly,
        ...(m.noCopy ? { VolumeOptions: { NoCopy: true } as Docker.MountSettings['VolumeOptions'] } : {}),
      });
    else if (m.type === 'anonymous')
      mounts.push({ Type: 'volume', Source: '', Target: m.target, ReadOnly: m.readOnly });
    else if (m.type === 'tmpfs')
      mounts.push({
        Type: 'tmpfs',
        Source: '',
        Target: m.target,
        ...(m.sizeBytes ? { TmpfsOptions: { SizeBytes: m.sizeBytes, Mode: 0o1777 } } : {}),
      });
    else if (m.relative) {
      const mount = relativeBind(m, opts, volumes, (message) => err(`volumes[${i}]`, message));
      if (mount) mounts.push(mount);
    } else {
      const src = await absoluteBind(m.source, opts.allowedBindRoots ?? []);
      if (typeof src !== 'string') {
        err(`volumes[${i}]`, src.reason);
        continue;
      }
      mounts.push({ Type: 'bind', Source: src, Target: m.target, ReadOnly: m.readOnly });
    }
  }
  return mounts;
}

/** A relative bind through the deployment's bind table: a bind, a seeded volume, or refused. */
function relativeBind(
  m: { source: string; target: string; readOnly: boolean },
  opts: PlanOptions,
  volumes: PlanVolume[],
  refuse: (message: string) => void,
): Docker.MountSettings | undefined {
  const b = opts.binds ? lookupBind(opts.binds, m.source, m.readOnly) : undefined;
  if (!b) {
    refuse("relative bind mounts need the deployment's copy of the repository");
    return undefined;
  }
  if (b.kind === 'refused') {
    refuse(b.reason);
    return undefined;
  }
  if (b.kind === 'bind') return { Type: 'bind', Source: b.source, Target: m.target, ReadOnly: m.readOnly };
  const name = volumeName(opts.app, b.key);
  if (!volumes.some((v) => v.name === name))
    volumes.push({
      key: b.key,
      name,
      labels: { [LABEL_BIND]: showBind(m.source) },
      ...(b.seed ? { seed: b.seed } : {}),
    });
  return { Type: 'volume', Source: name, Target: m.target, ReadOnly: false };
}

/** Where a built service's context is, inside the working copy. */
async function planBuild(
  spec: ServiceSpec,
  workdir: string | undefined,
  err: Complain,
): Promise<PlanService['build']> {
  if (!spec.build) return undefined;
  if (!workdir) {
    err('build', "building needs the app's working copy");
    return undefined;
  }
  const contextDir = await resolveInside(workdir, spec.build.context);
  if (!contextDir) {
    err('build.context', 'build context resolves outside the working copy');
    return undefined;
  }
  return {
    contextDir,
    dockerfile: spec.build.dockerfile,
    args: spec.build.args,
    target: spec.build.target,
  };
}

/** One service of the plan, in Docker's terms. */
function planService(
  name: string,
  spec: ServiceSpec,
  opts: PlanOptions,
  parts: { env: string[]; mounts: Docker.MountSettings[]; build: PlanService['build'] },
): PlanService {
  const { exposed, bindings } = planPorts(spec, opts.defaultHostIp);
  const hc = spec.healthcheck;
  return {
    name,
    image: spec.image ?? null,
    build: parts.build,
    env: parts.env,
    dependsOn: Object.entries(spec.dependsOn).map(([service, d]) => ({ service, condition: d.condition })),
    networks: spec.networkMode
      ? []
      : Object.entries(Object.keys(spec.networks).length ? spec.networks : { default: { aliases: [] } }).map(
          ([key, n]) => ({ name: networkName(opts.app, key), aliases: n.aliases }),
        ),
    networkMode:
      spec.networkMode === 'none'
        ? { none: true }
        : spec.networkMode
          ? { service: spec.networkMode.slice('service:'.length) }
          : undefined,
    hasHealthcheck: !!hc && hc.test[0] !== 'NONE',
    publishesFixedHostPort: spec.ports.some((p) => p.published !== undefined),
    labels: spec.labels,
    config: {
      ...(spec.command ? { Cmd: spec.command } : {}),
      ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
      ...(spec.workingDir ? { WorkingDir: spec.workingDir } : {}),
      ...(spec.user ? { User: spec.user } : {}),
      ...(spec.hostname ? { Hostname: spec.hostname } : {}),
      ...(spec.tty ? { Tty: true } : {}),
      ...(spec.stdinOpen ? { OpenStdin: true } : {}),
      ...(spec.stopSignal ? { StopSignal: spec.stopSignal } : {}),
      ...(spec.stopGracePeriodMs !== undefined
        ? { StopTimeout: Math.ceil(spec.stopGracePeriodMs / 1000) }
        : {}),
      ExposedPorts: exposed,
      ...(hc
        ? {
            Healthcheck: {
              Test: hc.test.length ? hc.test : undefined,
              ...(hc.intervalMs !== undefined ? { Interval: hc.intervalMs * 1e6 } : {}),
              ...(hc.timeoutMs !== undefined ? { Timeout: hc.timeoutMs * 1e6 } : {}),
              ...(hc.startPeriodMs !== undefined ? { StartPeriod: hc.startPeriodMs * 1e6 } : {}),
              ...(hc.retries !== undefined ? { Retries: hc.retries } : {}),
            },
          }
        : {}),
      HostConfig: hostConfig(spec, parts.mounts, bindings),
    },
  };
}

/** Exposed ports and host bindings (a port naming no host IP gets the plan's default). */
function planPorts(
  spec: ServiceSpec,
  defaultHostIp: string | undefined,
): { exposed: Record<string, object>; bindings: Docker.PortMap } {
  const exposed: Record<string, object> = {};
  const bindings: Docker.PortMap = {};
  for (const e of spec.expose) exposed[e] = {};
  for (const p of spec.ports) {
    const key = `${p.target}/${p.protocol}`;
    exposed[key] = {};
    (bindings[key] ??= []).push({
      HostIp: p.hostIp ?? defaultHostIp ?? '',
      HostPort: p.published === undefined ? '' : String(p.published),
    });
  }
  return { exposed, bindings };
}

function hostConfig(
  spec: ServiceSpec,
  mounts: Docker.MountSettings[],
  bindings: Docker.PortMap,
): Docker.HostConfig {
  return {
    Mounts: mounts,
    PortBindings: bindings,
    RestartPolicy: spec.restart
      ? {
          Name: spec.restart.name,
          MaximumRetryCount: spec.restart.name === 'on-failure' ? spec.restart.maxRetries : 0,
        }
      : { Name: 'no' },
    ...(spec.limits?.nanoCpus ? { NanoCpus: spec.limits.nanoCpus } : {}),
    ...(spec.limits?.memoryBytes ? { Memory: spec.limits.memoryBytes } : {}),
    ...(spec.capAdd.length ? { CapAdd: spec.capAdd } : {}),
    ...(spec.capDrop.length ? { CapDrop: spec.capDrop } : {}),
    ...(spec.extraHosts.length ? { ExtraHosts: spec.extraHosts } : {}),
    ...(spec.tmpfs.length
      ? {
          Tmpfs: Object.fromEntries(
            spec.tmpfs.map((t) => {
              const [p, o] = t.split(/:(.*)/s);
              return [p, o ?? ''];
            }),
          ),
        }
      : {}),
    ...(spec.init ? { Init: true } : {}),
    ...(spec.readOnly ? { ReadonlyRootfs: true } : {}),
    ...(spec.shmSizeBytes ? { ShmSize: spec.shmSizeBytes } : {}),
    ...(Object.keys(spec.sysctls).length ? { Sysctls: spec.sysctls } : {}),
    ...(spec.securityOpt.length ? { SecurityOpt: spec.securityOpt } : {}),
  };
}

/** A service waiting for another to be healthy when that one has no healthcheck. */
function unhealthyWaits(services: PlanService[]): Finding[] {
  const findings: Finding[] = [];
  for (const s of services) {
    for (const d of s.dependsOn) {
      const dep = services.find((x) => x.name === d.service);
      if (d.condition === 'service_healthy' && dep && !dep.hasHealthcheck) {
        findings.push({
          level: 'error',
          service: s.name,
          key: `depends_on.${d.service}`,
          message: `waits for "${d.service}" to be healthy, but it has no healthcheck`,
        });
      }
    }
  }
  return findings;
}

async function serviceEnv(
  spec: ServiceSpec,
  appEnv: Readonly<Record<string, string>>,
  inject: boolean,
  workdir: string | undefined,
  err: (key: string, message: string) => void,
): Promise<string[]> {
  const env = new Map<string, string>(inject ? Object.entries(appEnv) : []);
  for (const [i, f] of spec.envFiles.entries()) {
    const key = spec.envFiles.length > 1 ? `env_file[${i}]` : 'env_file';
    if (!workdir) {
      err(key, "env_file needs the app's working copy");
      continue;
    }
    const file = await resolveInside(workdir, f.path);
    if (!file) {
      err(key, `env file "${f.path}" resolves outside the working copy`);
      continue;
    }
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      if (f.required) err(key, `env file "${f.path}" not found`);
      continue;
    }
    for (const { key: k, value } of parseDotenv(text)) env.set(k, value);
  }
  for (const [k, v] of Object.entries(spec.environment)) {
    if (v !== null) env.set(k, v);
    else if (Object.prototype.hasOwnProperty.call(appEnv, k)) env.set(k, appEnv[k]);
    else env.delete(k);
  }
  const out: string[] = [];
  for (const [k, v] of env) {
    if (v.includes('\0') || k.includes('\0')) {
      err(`environment.${k}`, 'values cannot contain NUL bytes');
      continue;
    }
    out.push(`${k}=${v}`);
  }
  return out;
}

/** Kept for callers that name it so: see resolveInside. */
export const insideWorkdir = resolveInside;

/**
 * An absolute bind source (allowed by parseCompose as written) resolved to its real path and
 * checked again: a symlink on the way may lead out of the allowed roots or onto the socket.
 */
async function absoluteBind(source: string, roots: readonly string[]): Promise<string | { reason: string }> {
  let real: string;
  try {
    real = await realpath(source);
  } catch {
    return { reason: `bind source "${source}" does not exist on the host` };
  }
  const realRoots = await Promise.all(roots.map((r) => realpath(r).catch(() => null)));
  if (!realRoots.some((r) => r !== null && within(r, real)))
    return { reason: `bind source "${source}" resolves to "${real}", outside the allowed roots` };
  const problem = await hostPathProblem(real);
  return problem ? { reason: `bind source "${source}": ${problem}` } : real;
}

/**
 * A directory some service may write must not lie above another bind's source: whoever writes
 * it can swap a folder on that path for a symlink, and the engine follows it at the next start.
 */
function writableAboveOthers(services: PlanService[]): Finding[] {
  const binds = services.flatMap((s) =>
    (s.config.HostConfig?.Mounts ?? [])
      .filter((m) => m.Type === 'bind')
      .map((m) => ({ service: s.name, source: m.Source, target: m.Target, rw: !m.ReadOnly })),
  );
  const out: Finding[] = [];
  for (const w of binds.filter((b) => b.rw)) {
    for (const b of binds) {
      if (b.source !== w.source && within(w.source, b.source)) {
        out.push({
          level: 'error',
          service: b.service,
          key: 'volumes',
          message: `bind source "${b.source}" lies inside "${w.source}", which ${w.service} mounts writable at ${w.target}; refused`,
        });
      }
    }
  }
  return out;
}
