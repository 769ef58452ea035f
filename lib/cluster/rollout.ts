// The cluster counterpart of lib/deploy/bluegreen.ts: each planned service becomes one Swarm
// service, created or updated with the whole new spec. The swarm replaces tasks start-first and
// rolls back on its own when a new task fails within the monitor period; this module reads the
// tasks until every new replica runs healthy, and rolls back itself on everything the swarm does
// not treat as a failure (a task nobody can place, the deploy's time running out, a cancel).
import type Docker from 'dockerode';
import {
  EngineConflictError,
  StackError,
  guard,
  isNotFound,
  removeContainer,
  type Engine,
  type StackPlan,
} from '../docker/index.js';
import { LABEL_ROLE, swarmServiceName } from '../docker/names.js';
import { serviceAuth } from '../docker/pull.js';
import { ownerLabels } from '../docker/owner.js';
import { sleep } from '../util/sleep.js';
import type { ClusterSettings } from './settings.js';
import type { RegistryAuth } from './images.js';
import {
  MONITOR_NS,
  ensureOverlayNetworks,
  httpHealthCheck,
  isOurService,
  namedVolumes,
  serviceSpec,
} from './spec.js';
import { waitForRollout } from './tasks.js';

export interface ClusterRolloutOptions {
  deploymentId: string;
  /** Image per service as the nodes pull it (registry references). */
  images: Record<string, string>;
  /** The same images by a name this engine has locally (for reading their HEALTHCHECK and tools). */
  localImages?: Record<string, string>;
  settings: Map<string, { port: number | null; health_path: string | null }>;
  cluster: Map<string, ClusterSettings>;
  /** Records the node a volume-backed service is pinned to (its first deploy). */
  pin: (service: string, nodeId: string) => Promise<void>;
  signal?: AbortSignal;
  log: (line: string) => void;
  timeoutMs: number;
  onHealthChecking: () => Promise<void>;
  /**
   * The cluster registry's account, handed to Swarm (X-Registry-Auth) with each service whose image
   * is in that registry, so that every node pulls with it; never with an image from elsewhere (it
   * would go to that registry).
   */
  registryAuth?: { username: string; password: string; serveraddress: string } | Record<string, never>;
}

/** The auth a service's image is pulled with: the cluster registry's account for its images only. */
export function authFor(
  image: string,
  auth: ClusterRolloutOptions['registryAuth'],
): NonNullable<ClusterRolloutOptions['registryAuth']> {
  return auth && 'serveraddress' in auth && image.startsWith(`${auth.serveraddress}/`) ? auth : {};
}

/** The shape of lib/deploy/bluegreen.ts RolloutResult: on a swarm nothing old is left to retire. */
export interface ClusterRolloutResult {
  replaced: string[];
  /** Removes the app's Swarm services that are no longer in its stack. */
  retire(): Promise<string[]>;
}

interface Touched {
  service: string;
  name: string;
  created: boolean;
}

type ServiceInfo = Docker.Service & { ID: string; Version: { Index: number }; Spec: Docker.ServiceSpec };

async function findService(engine: Engine, name: string): Promise<ServiceInfo | null> {
  try {
    return (await guard(engine, () => engine.docker.getService(name).inspect())) as ServiceInfo;
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

export async function clusterRollout(
  engine: Engine,
  plan: StackPlan,
  opts: ClusterRolloutOptions,
): Promise<ClusterRolloutResult> {
  const { log, signal } = opts;
  signal?.throwIfAborted();
  await ensureOverlayNetworks(engine, plan);
  log(`networks: ${plan.networks.map((n) => n.name).join(', ')} (overlay, attachable)`);
  const touched: Touched[] = [];
  let checking = false;
  try {
    for (const svc of plan.services) {
      signal?.throwIfAborted();
      const name = swarmServiceName(plan.app, svc.name);
      const cs = opts.cluster.get(svc.name);
      const replicas = cs?.replicas ?? 1;
      const constraints = [...(cs?.placement?.constraints ?? [])];
      const volumes = namedVolumes(svc);
      if (volumes.length) {
        let node = cs?.pinned_node ?? null;
        if (!node) {
          node = await pickNode(engine, constraints);
          await opts.pin(svc.name, node);
          log(
            `${svc.name}: mounts ${volumes.join(', ')}: pinned to node ${node} (volumes are local to a node)`,
          );
        } else log(`${svc.name}: pinned to node ${node}, where its volumes are`);
        constraints.push(`node.id==${node}`);
      }
      const image = opts.images[svc.name];
      if (!image) throw new StackError(`${svc.name}: no image to run`, svc.name);
      const healthCheck = await chooseHealthCheck(
        engine,
        svc,
        opts.localImages?.[svc.name] ?? image,
        opts,
        log,
      );
      const spec = serviceSpec(engine, plan, svc, {
        deploymentId: opts.deploymentId,
        image,
        replicas,
        constraints,
        healthCheck,
      });
      const existing = await findService(engine, name);
      if (existing && !isOurService(engine, existing, plan.app, svc.name))
        throw new EngineConflictError(
          `swarm service "${name}" exists but does not belong to app "${plan.app}"; it is left alone`,
        );
      signal?.throwIfAborted();
      // The nodes pull with the cluster registry's account for its own images, else with the
      // stored login of the image's registry.
      const own = authFor(image, opts.registryAuth);
      const auth = 'serveraddress' in own ? own : await serviceAuth(engine, image);
      if (!existing) {
        await guard(engine, () => engine.docker.createService(auth, spec));
        touched.push({ service: svc.name, name, created: true });
        log(`${svc.name}: created swarm service ${name} (${replicas} replica${replicas === 1 ? '' : 's'})`);
      } else {
        await guard(engine, () =>
          updateService(engine, existing.ID, { version: existing.Version.Index }, spec, auth),
        );
        touched.push({ service: svc.name, name, created: false });
        log(
          `${svc.name}: updating swarm service ${name} start-first (${replicas} replica${replicas === 1 ? '' : 's'})`,
        );
      }
      if (!checking) {
        checking = true;
        await opts.onHealthChecking();
      }
      await waitForRollout(engine, {
        serviceName: name,
        deploymentId: opts.deploymentId,
        replicas,
        timeoutMs: opts.timeoutMs + Math.max(1, replicas) * (MONITOR_NS / 1e6 + 5_000),
        signal,
        log: (l) => log(`${svc.name}: ${l}`),
        updating: !!existing,
      });
      log(`${svc.name}: every new replica runs${healthCheck || svc.hasHealthcheck ? ' and is healthy' : ''}`);
    }
  } catch (e) {
    for (const t of touched.reverse()) await undo(engine, t, log);
    throw e;
  }
  const wanted = new Set(plan.services.map((s) => swarmServiceName(plan.app, s.name)));
  const retire = async () => {
    const removed: string[] = [];
    for (const s of await appSwarmServices(engine, plan.app)) {
      if (wanted.has(s.Spec.Name ?? '')) continue;
      await guard(engine, () => engine.docker.getService(s.ID).remove()).then(
        () => {
          removed.push(s.Spec.Name ?? s.ID);
          log(`removed swarm service ${s.Spec.Name}, no longer in the stack`);
        },
        (err) => log(`could not remove swarm service ${s.Spec.Name}: ${(err as Error).message}`),
      );
    }
    return removed;
  };
  return { replaced: [], retire };
}

/**
 * `POST /services/{id}/update` with the spec as the body and only the version (and rollback) in the
 * query: dockerode's own form would also copy the whole spec into the query string.
 *
 * `auth` present: it replaces the pull credentials the swarm keeps with the service (an empty one
 * removes them: what a deploy of an image from elsewhere sends). Absent: no X-Registry-Auth header
 * at all, and the swarm keeps the stored ones (`registryAuthFrom=spec`, or `previous-spec` for a
 * rollback). Any header, even `{}`, counts as new credentials: a scale or restart sending one
 * would leave the service unable to pull from the cluster registry on a node that lacks its image.
 */
export function updateService(
  engine: Engine,
  id: string,
  query: { version: number; rollback?: 'previous' },
  spec: object,
  auth?: RegistryAuth,
): Promise<unknown> {
  const svc = engine.docker.getService(id) as unknown as {
    update(auth: object | undefined, opts: object): Promise<unknown>;
  };
  const from = query.rollback ? 'previous-spec' : 'spec';
  return svc.update(auth, { _query: auth ? query : { ...query, registryAuthFrom: from }, _body: spec });
}

/** This app's Swarm services (only those carrying every ownership label). */
/** The app's Swarm services; its one-off runs' job services too with `runs`. */
export async function appSwarmServices(
  engine: Engine,
  app: string,
  opts: { runs?: boolean } = {},
): Promise<ServiceInfo[]> {
  const list = (await guard(engine, () =>
    engine.docker.listServices({ filters: { label: [`svc.app=${app}`] } }),
  )) as ServiceInfo[];
  return list.filter((s) => isOurService(engine, s, app, undefined, opts.runs));
}

/** A failed or canceled deploy: a created service goes, an updated one returns to its previous spec. */
async function undo(engine: Engine, t: Touched, log: (line: string) => void): Promise<void> {
  try {
    const info = await findService(engine, t.name);
    if (!info) return;
    if (t.created) {
      await guard(engine, () => engine.docker.getService(info.ID).remove());
      log(`${t.service}: removed the swarm service this deployment created`);
      return;
    }
    const state = (info.UpdateStatus as { State?: string } | undefined)?.State ?? '';
    if (!state.startsWith('rollback')) {
      await guard(engine, () =>
        updateService(engine, info.ID, { version: info.Version.Index, rollback: 'previous' }, info.Spec),
      );
      log(`${t.service}: rolling the swarm service back to its previous spec`);
    }
    const until = Date.now() + 60_000;
    for (;;) {
      const now = await findService(engine, t.name);
      const st = (now?.UpdateStatus as { State?: string } | undefined)?.State ?? '';
      if (!now || st === 'rollback_completed') {
        log(`${t.service}: the previous version runs again`);
        return;
      }
      if (st === 'rollback_paused' || Date.now() > until) {
        log(`${t.service}: the rollback is ${st || 'not finished'}; check the service's tasks`);
        return;
      }
      await sleep(500);
    }
  } catch (e) {
    log(`${t.service}: could not undo the change to ${t.name}: ${(e as Error).message}`);
  }
}

interface NodeInfo {
  ID: string;
  Spec?: { Role?: string; Availability?: string; Labels?: Record<string, string> };
  Description?: { Hostname?: string };
  Status?: { State?: string };
}

/** Whether a node satisfies checked constraints (only the forms lib/cluster/settings.ts admits). */
export function nodeMatches(n: NodeInfo, constraints: string[]): boolean {
  return constraints.every((c) => {
    const m = /^(node\.labels\.(.+)|node\.hostname|node\.role|node\.id)(==|!=)(.*)$/.exec(c);
    if (!m) return false;
    const actual =
      m[2] !== undefined
        ? n.Spec?.Labels?.[m[2]]
        : m[1] === 'node.hostname'
          ? n.Description?.Hostname
          : m[1] === 'node.role'
            ? n.Spec?.Role
            : n.ID;
    return m[3] === '==' ? actual === m[4] : actual !== m[4];
  });
}

/** The node a volume-backed service settles on: a ready, active one that fits, with the fewest tasks. */
async function pickNode(engine: Engine, constraints: string[]): Promise<string> {
  const nodes = (await guard(engine, () => engine.docker.listNodes())) as NodeInfo[];
  const fit = nodes.filter(
    (n) => n.Status?.State === 'ready' && n.Spec?.Availability === 'active' && nodeMatches(n, constraints),
  );
  if (!fit.length)
    throw new StackError(
      `no ready node satisfies the placement (${constraints.join(', ') || 'none'}) to hold the service's volumes`,
    );
  const tasks = (await guard(engine, () =>
    engine.docker.listTasks({ filters: { 'desired-state': ['running'] } }),
  )) as Array<{ NodeID?: string }>;
  const load = (id: string) => tasks.filter((t) => t.NodeID === id).length;
  return fit.sort((a, b) => load(a.ID) - load(b.ID) || a.ID.localeCompare(b.ID))[0]!.ID;
}

/**
 * The compose healthcheck, else the image's own (left to the image), else with a port an HTTP
 * probe with the image's wget or curl; else none, and the gate is "running" (plus the monitor).
 */
async function chooseHealthCheck(
  engine: Engine,
  svc: StackPlan['services'][number],
  localImage: string,
  opts: ClusterRolloutOptions,
  log: (line: string) => void,
): Promise<Docker.HealthConfig | undefined> {
  const planned = svc.config.Healthcheck;
  if (planned?.Test?.length) {
    log(`${svc.name}: health: the compose healthcheck`);
    return planned as Docker.HealthConfig;
  }
  const info = await guard(engine, () => engine.docker.getImage(localImage).inspect()).catch(() => null);
  const own = info?.Config?.Healthcheck?.Test;
  if (own?.length && own[0] !== 'NONE') {
    log(`${svc.name}: health: the image's own HEALTHCHECK`);
    return undefined;
  }
  const s = opts.settings.get(svc.name);
  if (!s?.port) {
    log(
      `${svc.name}: health: no healthcheck and no port: a task counts once it runs through the monitor period`,
    );
    return undefined;
  }
  const tool = info ? await probeTool(engine, localImage) : null;
  if (!tool) {
    log(
      `${svc.name}: health: the image has neither wget nor curl nor a HEALTHCHECK: a task counts once it runs`,
    );
    return undefined;
  }
  log(`${svc.name}: health: GET ${s.health_path ?? '/'} on port ${s.port} with the image's ${tool}`);
  return httpHealthCheck(tool, s.port, s.health_path);
}

/** Which HTTP client the image has, asked of a short container of it (no network, no app env). */
async function probeTool(engine: Engine, image: string): Promise<'wget' | 'curl' | null> {
  let id: string | null = null;
  try {
    const c = await guard(engine, () =>
      engine.docker.createContainer({
        Image: image,
        Entrypoint: [
          'sh',
          '-c',
          'command -v wget >/dev/null && echo wget || { command -v curl >/dev/null && echo curl; } || echo none',
        ],
        Cmd: [],
        Tty: true,
        Labels: { ...ownerLabels(engine), [LABEL_ROLE]: 'probe' },
        HostConfig: { NetworkMode: 'none' },
      }),
    );
    id = c.id;
    await guard(engine, () => c.start());
    await guard(engine, () => c.wait());
    const out = String(await guard(engine, () => c.logs({ stdout: true, stderr: false, follow: false })));
    return /\bwget\b/.test(out) ? 'wget' : /\bcurl\b/.test(out) ? 'curl' : null;
  } catch {
    return null;
  } finally {
    if (id) await removeContainer(engine, id).catch(() => {});
  }
}
