// The edge in cluster mode (SVC_CLUSTER=swarm): Caddy as a container on the manager the control
// plane talks to, attached to the apps' overlay networks so that it resolves and reaches their tasks
// (`tasks.<service>` in the engine's DNS, see config.ts). Its config is still loaded through the
// admin API by the same sync as on one host; this module only makes sure the container exists as
// specified and sits on the right networks, before each sync run.
//
// Why a plain container and not a Swarm service: a service whose networks change is replaced (new
// task, new container), which would drop connections and certificates in memory at every app
// created or deleted; a container is connected to a network in place. Host ports 80/443 are
// published by the engine directly (no routing mesh, which needs IPVS). The admin endpoint is
// published only on the host and port of SVC_CADDY_ADMIN: it takes configs holding private keys,
// so it must never be on a public address (a wildcard one is refused here).
// Certificates and ACME accounts live in a named volume, so they survive restarts and
// re-creation (a changed image or port re-creates the container).
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import type TarStream from 'tar-stream';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { guard, isNotFound, type Engine } from '../docker/engine.js';
import { ensureImage } from '../docker/pull.js';
import { LABEL_APP, LABEL_ROLE } from '../docker/names.js';
import { isOwned, ownedFilter, ownerLabels } from '../docker/owner.js';
import { lazyRequire } from '../util/lazy.js';
import { CaddyError } from './caddy.js';

const tar = lazyRequire<typeof TarStream>('tar-stream');

export const EDGE_CONTAINER = 'svc-edge';
export const EDGE_VOLUME = 'svc-edge-data';
export const EDGE_ROLE = 'edge';
/** The official image; SVC_IMAGE_MAP may name a mirror or a local stand-in. */
export const EDGE_IMAGE = 'caddy:2';
/** A digest of the container's specification: another one means re-create it. */
export const LABEL_EDGE_SPEC = 'svc.edge.spec';
/** Where Caddy's admin endpoint listens inside the container. */
const ADMIN_PORT = 2019;
const CONFIG_DIR = '/etc/caddy';
const INITIAL_CONFIG = 'svc-edge.json';
/** XDG_DATA_HOME of the official image: certificates, keys, ACME accounts. */
const DATA_DIR = '/data';

export interface EdgeContainerSpec {
  image: string;
  /** The admin endpoint as published on the manager. */
  admin: { host: string; port: number };
  /** What Caddy starts with until the first load (its autosave afterwards, `--resume`). */
  initialConfig: Record<string, unknown>;
  /** dockerode's createContainer options, labels included. */
  create: Record<string, unknown>;
  hash: string;
}

export class EdgeSetupError extends Error {}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

/**
 * The container's specification from the configuration (pure). Throws EdgeSetupError when the
 * admin endpoint cannot be published safely.
 */
export function edgeContainerSpec(config: Config, labels: Record<string, string>): EdgeContainerSpec {
  const p = config.proxy;
  if (p.adminUrl.startsWith('unix/'))
    throw new EdgeSetupError(
      'SVC_CADDY_ADMIN must be an http:// address on the manager in cluster mode, not a unix socket',
    );
  const url = new URL(p.adminUrl);
  const bare = url.hostname.replace(/^\[|\]$/g, '');
  const host = bare === 'localhost' ? '127.0.0.1' : bare;
  if (isWildcard(host))
    throw new EdgeSetupError(
      'SVC_CADDY_ADMIN must name one private address of the manager, never a wildcard (it takes private keys)',
    );
  const port = Number(url.port) || 80;
  const image = config.imageMap[EDGE_IMAGE] ?? EDGE_IMAGE;
  const initialConfig = {
    admin: { listen: `0.0.0.0:${ADMIN_PORT}`, origins: [url.host] },
  };
  const binds = [`${dirname(config.accessLog)}:${dirname(config.accessLog)}`];
  if (p.acmeCaRoot) binds.push(`${p.acmeCaRoot}:${p.acmeCaRoot}:ro`);
  const ports = [p.httpPort, p.httpsPort];
  const body = {
    Image: image,
    Cmd: ['caddy', 'run', '--resume', '--config', `${CONFIG_DIR}/${INITIAL_CONFIG}`],
    Env: [`XDG_DATA_HOME=${DATA_DIR}`, 'XDG_CONFIG_HOME=/config'],
    ExposedPorts: Object.fromEntries([...ports, ADMIN_PORT].map((n) => [`${n}/tcp`, {}])),
    HostConfig: {
      RestartPolicy: { Name: 'unless-stopped' },
      NetworkMode: 'bridge',
      PortBindings: {
        ...Object.fromEntries(ports.map((n) => [`${n}/tcp`, [{ HostPort: String(n) }]])),
        [`${ADMIN_PORT}/tcp`]: [{ HostIp: host, HostPort: String(port) }],
      },
      Mounts: [{ Type: 'volume', Source: EDGE_VOLUME, Target: DATA_DIR }],
      // The access log is read by the control plane on the manager (request metrics, sleep).
      Binds: binds,
    },
  };
  const hash = createHash('sha256')
    .update(JSON.stringify({ body, initialConfig }))
    .digest('hex')
    .slice(0, 32);
  const create = {
    name: EDGE_CONTAINER,
    ...body,
    Labels: { ...labels, [LABEL_ROLE]: EDGE_ROLE, [LABEL_EDGE_SPEC]: hash },
  };
  return { image, admin: { host, port }, initialConfig, create, hash };
}

async function ensureVolume(engine: Engine): Promise<void> {
  try {
    const v = (await engine.docker.getVolume(EDGE_VOLUME).inspect()) as { Labels?: Record<string, string> };
    if (!isOwned(engine, 'volume', EDGE_VOLUME, v.Labels))
      throw new EdgeSetupError(`volume "${EDGE_VOLUME}" exists but is not this instance's`);
    return;
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  await engine.docker.createVolume({
    Name: EDGE_VOLUME,
    Labels: { ...ownerLabels(engine), [LABEL_ROLE]: EDGE_ROLE },
  });
}

function configArchive(config: Record<string, unknown>): NodeJS.ReadableStream {
  const body = Buffer.from(`${JSON.stringify(config)}\n`);
  const pack = tar().pack();
  pack.entry({ name: INITIAL_CONFIG, size: body.length, mode: 0o600 }, body, (err) =>
    err ? pack.destroy(err) : pack.finalize(),
  );
  return pack as unknown as NodeJS.ReadableStream;
}

/**
 * The edge container exists as specified and runs; re-created (keeping its volume) when the
 * specification changed. Resolves with its id and whether it was (re)started just now.
 */
export async function ensureEdgeContainer(
  engine: Engine,
  config: Config,
): Promise<{ id: string; started: boolean }> {
  const spec = edgeContainerSpec(config, ownerLabels(engine));
  return guard(engine, async () => {
    const d = engine.docker;
    let info: {
      Id: string;
      Config: { Labels?: Record<string, string> };
      State: { Running: boolean };
    } | null = null;
    try {
      info = await d.getContainer(EDGE_CONTAINER).inspect();
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (info) {
      const labels = info.Config.Labels ?? {};
      if (!isOwned(engine, 'container', info.Id, labels) || labels[LABEL_ROLE] !== EDGE_ROLE)
        throw new EdgeSetupError(`container "${EDGE_CONTAINER}" exists but is not this instance's edge`);
      if (labels[LABEL_EDGE_SPEC] === spec.hash) {
        if (info.State.Running) return { id: info.Id, started: false };
        await d.getContainer(info.Id).start();
        return { id: info.Id, started: true };
      }
      await d.getContainer(info.Id).remove({ force: true });
    }
    await ensureVolume(engine);
    await ensureImage(engine, spec.image);
    const c = await d.createContainer(spec.create);
    try {
      await c.putArchive(configArchive(spec.initialConfig), { path: CONFIG_DIR });
      await c.start();
    } catch (e) {
      await c.remove({ force: true }).catch(() => {});
      throw e;
    }
    return { id: c.id, started: true };
  });
}

interface NetworkInfo {
  Id: string;
  Name: string;
  Driver?: string;
  Internal?: boolean;
  Labels?: Record<string, string>;
}

/**
 * Connects the edge to the overlay network of every app in `apps` and disconnects it from those of
 * apps that are gone (before their networks are removed: the engine refuses to remove a network
 * with the edge still on it). Internal networks are left alone: nothing outside may reach them.
 */
export async function syncEdgeNetworks(
  engine: Engine,
  containerId: string,
  apps: ReadonlySet<string>,
  log: Logger,
): Promise<{ connected: string[]; disconnected: string[] }> {
  const d = engine.docker;
  const [info, nets] = await guard(engine, () =>
    Promise.all([
      d.getContainer(containerId).inspect() as Promise<{
        NetworkSettings: { Networks: Record<string, { NetworkID: string }> };
      }>,
      d.listNetworks({ filters: ownedFilter(engine, [LABEL_APP]) }) as Promise<NetworkInfo[]>,
    ]),
  );
  const on = new Set(Object.values(info.NetworkSettings.Networks ?? {}).map((n) => n.NetworkID));
  const out = { connected: [] as string[], disconnected: [] as string[] };
  for (const n of nets) {
    if (!isOwned(engine, 'network', n.Id, n.Labels) || n.Driver !== 'overlay' || n.Internal) continue;
    const want = apps.has(n.Labels?.[LABEL_APP] ?? '');
    if (want === on.has(n.Id)) continue;
    try {
      const net = d.getNetwork(n.Id);
      if (want) await net.connect({ Container: containerId });
      else await net.disconnect({ Container: containerId, Force: true });
      (want ? out.connected : out.disconnected).push(n.Name);
    } catch (e) {
      // One network failing must not keep the others (or the config load) from happening.
      log.warn(
        { network: n.Name, err: String((e as Error).message ?? e).split('\n')[0] },
        want ? 'could not connect the edge to an app network' : 'could not disconnect the edge',
      );
    }
  }
  return out;
}

/**
 * The sync's preparation in cluster mode: the container, then its networks. `ready` is awaited
 * after the container was (re)started, so that the load that follows finds the admin endpoint up.
 */
export function clusterEdgePreparer(opts: {
  engine: Engine;
  config: Config;
  log: Logger;
  ready: () => Promise<boolean>;
  readyTimeoutMs?: number;
}): (apps: ReadonlySet<string>) => Promise<void> {
  return async (apps) => {
    let id: string;
    try {
      const r = await ensureEdgeContainer(opts.engine, opts.config);
      id = r.id;
      if (r.started) {
        opts.log.info({ container: EDGE_CONTAINER }, 'edge container started');
        const until = Date.now() + (opts.readyTimeoutMs ?? 30_000);
        while (!(await opts.ready()) && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
      }
    } catch (e) {
      const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
      throw new CaddyError(`the edge container could not be set up: ${why}`, true);
    }
    const changed = await syncEdgeNetworks(opts.engine, id, apps, opts.log).catch((e: unknown) => {
      opts.log.warn({ err: String((e as Error).message ?? e) }, 'could not list the app networks');
      return null;
    });
    if (changed && (changed.connected.length || changed.disconnected.length))
      opts.log.info(changed, 'edge networks changed');
  };
}
