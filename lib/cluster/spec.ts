// A planned service (lib/docker/plan.ts) in Swarm's terms. DNS round robin endpoints only (no
// virtual IPs), host-mode ports only, start-first updates that roll back on failure: the same
// promises as the blue/green path on one host, kept by the swarm's own updater.
import type Docker from 'dockerode';
import { EngineConflictError, StackError, guard, type Engine } from '../docker/engine.js';
import {
  LABEL_APP,
  LABEL_DEPLOYMENT,
  LABEL_NETWORK,
  LABEL_RUN,
  LABEL_SERVICE,
  LABEL_VOLUME,
  swarmServiceName,
} from '../docker/names.js';
import { isOwned, ownerLabels } from '../docker/owner.js';
import type { PlanService, StackPlan } from '../docker/plan.js';
import { existingAppNetwork } from '../docker/resources.js';

const SECOND = 1e9;
/** How long the updater watches a new task before it counts as a success. */
export const MONITOR_NS = 5 * SECOND;

/** The app's networks as attachable overlays (the edge and probe containers join them). */
export async function ensureOverlayNetworks(engine: Engine, plan: StackPlan): Promise<void> {
  await guard(engine, async () => {
    for (const n of plan.networks) {
      const existing = await existingAppNetwork(engine, plan.app, n);
      if (existing) {
        if (existing.Driver !== 'overlay')
          throw new EngineConflictError(
            `network "${n.name}" is a ${existing.Driver} network from single-host mode; delete the app's containers and that network, then deploy again`,
          );
        continue;
      }
      await engine.docker.createNetwork({
        Name: n.name,
        Driver: 'overlay',
        Attachable: true,
        CheckDuplicate: true,
        Internal: n.internal,
        Labels: { ...n.labels, ...ownerLabels(engine), [LABEL_APP]: plan.app, [LABEL_NETWORK]: n.key },
      });
    }
  });
}

/** The labels that make a Swarm service ours: without all of them it is never touched. */
export function serviceLabels(
  engine: Engine,
  app: string,
  service: string,
  deploymentId: string,
): Record<string, string> {
  return {
    ...ownerLabels(engine),
    [LABEL_APP]: app,
    [LABEL_SERVICE]: service,
    [LABEL_DEPLOYMENT]: deploymentId,
  };
}

/**
 * An app's Swarm service made by this instance. A one-off run's job service carries the same
 * labels and the run's id: it is the app's, but no service of its stack (only with `runs`).
 */
export function isOurService(
  engine: Engine,
  s: { ID: string; Spec?: { Labels?: Record<string, string> } },
  app: string,
  service?: string,
  runs = false,
): boolean {
  const l = s.Spec?.Labels;
  return (
    // A Swarm service is not one of the kinds adoption knows: only the instance label counts.
    isOwned(engine, 'container', `swarm-service:${s.ID}`, l) &&
    l?.[LABEL_APP] === app &&
    !!l[LABEL_SERVICE] &&
    (service === undefined || l[LABEL_SERVICE] === service) &&
    !!l[LABEL_DEPLOYMENT] &&
    (runs || !l[LABEL_RUN])
  );
}

/** The named volumes a service mounts: they live on one node, so the service is pinned to it. */
export function namedVolumes(svc: PlanService): string[] {
  return (svc.config.HostConfig?.Mounts ?? [])
    .filter((m) => m.Type === 'volume' && m.Source)
    .map((m) => m.Source);
}

export interface SpecOptions {
  deploymentId: string;
  image: string;
  replicas: number;
  constraints: string[];
  /** undefined: the image's own healthcheck (or none). */
  healthCheck?: Docker.HealthConfig;
}

export function serviceSpec(
  engine: Engine,
  plan: StackPlan,
  svc: PlanService,
  opts: SpecOptions,
): Docker.CreateServiceOptions {
  if (svc.networkMode)
    throw new StackError(`${svc.name}: network_mode is not supported on a swarm`, svc.name);
  const hc = svc.config.HostConfig ?? {};
  const mounts: Docker.MountSettings[] = [];
  for (const m of hc.Mounts ?? []) {
    if (m.Type === 'bind')
      throw new StackError(
        `${svc.name}: bind mounts (${m.Target}) are host folders, which a swarm's other nodes do not have; use a named volume`,
        svc.name,
      );
    const vol = plan.volumes.find((v) => v.name === m.Source);
    mounts.push(
      m.Type === 'volume' && m.Source
        ? {
            ...m,
            VolumeOptions: {
              ...(m.VolumeOptions ?? {}),
              Labels: {
                ...(vol?.labels ?? {}),
                ...ownerLabels(engine),
                [LABEL_APP]: plan.app,
                [LABEL_VOLUME]: vol?.key ?? m.Source,
              },
            } as Docker.MountSettings['VolumeOptions'],
          }
        : m,
    );
  }
  const ports: Docker.PortConfig[] = [];
  for (const [key, bindings] of Object.entries(hc.PortBindings ?? {})) {
    const [target, proto] = key.split('/');
    for (const b of (bindings as Array<{ HostPort?: string }> | null) ?? []) {
      if (!b.HostPort) continue;
      ports.push({
        Protocol: (proto ?? 'tcp') as 'tcp' | 'udp',
        TargetPort: Number(target),
        PublishedPort: Number(b.HostPort),
        PublishMode: 'host',
      });
    }
  }
  // Two tasks on one node cannot bind the same host port: those replace stop-first.
  const order = ports.length ? 'stop-first' : 'start-first';
  const c = svc.config;
  const labels = serviceLabels(engine, plan.app, svc.name, opts.deploymentId);
  const grace = c.StopTimeout !== undefined ? c.StopTimeout * SECOND : 10 * SECOND;
  return {
    Name: swarmServiceName(plan.app, svc.name),
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: opts.image,
        // The app label stays off the containers: single-host code lists app containers by it.
        Labels: {
          ...svc.labels,
          ...ownerLabels(engine),
          [LABEL_SERVICE]: svc.name,
          [LABEL_DEPLOYMENT]: opts.deploymentId,
        },
        Env: svc.env,
        ...(c.Entrypoint ? { Command: c.Entrypoint as string[] } : {}),
        ...(c.Cmd ? { Args: c.Cmd as string[] } : {}),
        ...(c.WorkingDir ? { Dir: c.WorkingDir } : {}),
        ...(c.User ? { User: c.User } : {}),
        ...(c.Hostname ? { Hostname: c.Hostname } : {}),
        ...(c.Tty ? { TTY: true } : {}),
        ...(c.OpenStdin ? { OpenStdin: true } : {}),
        ...(c.StopSignal ? { StopSignal: c.StopSignal } : {}),
        StopGracePeriod: grace,
        Mounts: mounts,
        ...(opts.healthCheck ? { HealthCheck: opts.healthCheck } : {}),
        ...(hc.Init ? { Init: true } : {}),
        ...(hc.ReadonlyRootfs ? { ReadOnly: true } : {}),
        ...(hc.CapAdd ? { CapabilityAdd: hc.CapAdd } : {}),
        ...(hc.CapDrop ? { CapabilityDrop: hc.CapDrop } : {}),
        ...(hc.Sysctls ? { Sysctls: hc.Sysctls } : {}),
      } as Docker.ContainerSpec,
      ...(hc.NanoCpus || hc.Memory
        ? {
            Resources: {
              Limits: {
                ...(hc.NanoCpus ? { NanoCPUs: hc.NanoCpus } : {}),
                ...(hc.Memory ? { MemoryBytes: hc.Memory } : {}),
              },
            },
          }
        : {}),
      RestartPolicy: { Condition: 'any', Delay: 2 * SECOND },
      Placement: { Constraints: opts.constraints },
      Networks: svc.networks.map((n) => ({
        Target: n.name,
        Aliases: [...new Set([svc.name, ...n.aliases])],
      })),
    },
    Mode: { Replicated: { Replicas: opts.replicas } },
    UpdateConfig: {
      Parallelism: 1,
      Delay: 0,
      FailureAction: 'rollback',
      Monitor: MONITOR_NS,
      MaxFailureRatio: 0,
      Order: order,
    },
    RollbackConfig: {
      Parallelism: 1,
      Delay: 0,
      FailureAction: 'pause',
      Monitor: MONITOR_NS,
      MaxFailureRatio: 0,
      Order: order,
    },
    EndpointSpec: { Mode: 'dnsrr', ...(ports.length ? { Ports: ports } : {}) },
  } as Docker.CreateServiceOptions;
}

/**
 * The probe the service's tasks run when the image has no HEALTHCHECK and the service has a port:
 * wget or curl, whichever the image has (`tool`). With neither, no probe: the gate is "running".
 */
export function httpHealthCheck(
  tool: 'wget' | 'curl',
  port: number,
  path: string | null,
): Docker.HealthConfig {
  const url = `http://127.0.0.1:${port}${path ?? '/'}`;
  // The path was checked on input (a plain absolute path); quoting keeps the shell out of it anyway.
  const quoted = `'${url.replace(/'/g, `'\\''`)}'`;
  const cmd = tool === 'wget' ? `wget -q -O /dev/null ${quoted}` : `curl -fsS -m 3 -o /dev/null ${quoted}`;
  return {
    Test: ['CMD-SHELL', cmd],
    Interval: 2 * SECOND,
    Timeout: 5 * SECOND,
    Retries: 3,
    StartPeriod: 5 * SECOND,
  };
}
