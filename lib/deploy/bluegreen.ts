// Blue/green rollout of a planned stack. New containers start next to the old ones without the
// service's name on the network; once every one has passed its health gate, the proxy switches
// to them and the name moves to them (the new container gets the alias, then the old one is
// reconnected without it, keeping its address, so a lookup always finds a live address and its
// open connections go on). The old containers drain (lib/deploy/drain.ts), then are stopped and
// removed. Until the switch nothing old is touched; any failure removes what this deployment
// created.
// A service publishing a fixed host port cannot run twice: its old container is stopped first,
// and started again if the deployment fails.
import {
  isOwned,
  LABEL_APP,
  StackError,
  createServiceContainer,
  ensureNetworks,
  ensureVolumes,
  guard,
  isNotFound,
  listAppContainers,
  removeContainer,
  setAliases,
  startContainer,
  stopContainer,
  waitForCondition,
  type AppContainer,
  type Engine,
  type StackPlan,
} from '../docker/index.js';
import { healthGate, type ProbeMode } from './health.js';
import { drain, type DrainOptions } from './drain.js';

export interface RolloutOptions {
  deploymentId: string;
  /** Image per service (built tags, the plan's images, or a rollback's kept ones). */
  images: Record<string, string>;
  settings: Map<string, { port: number | null; health_path: string | null }>;
  signal?: AbortSignal;
  log: (line: string) => void;
  gate: { timeoutMs: number; settleMs: number; probe: ProbeMode; probeImage?: string };
  /** Called once every new container is started, before the gates. */
  onHealthChecking: () => Promise<void>;
  /** Pause between giving the new container the name and taking it from the old one. */
  overlapMs?: number;
  /**
   * How the old containers drain once the proxy took the switch: until their connections ended
   * or the service's `drain_s` passed. Without it (or without a switch) they stop at once.
   */
  drain?: Omit<DrainOptions, 'log' | 'signal'>;
  /**
   * The proxy's switch, once every new container passed its gate: routes move to them in one
   * change. True when the proxy took it (the old containers then drain before they stop).
   */
  switchProxy?: (created: ReadonlyArray<{ service: string; id: string }>) => Promise<boolean>;
}

interface Created {
  service: string;
  id: string;
  name: string;
  movesAlias: boolean;
}

export interface RolloutResult {
  /** The previous containers that the new ones replaced (still draining until `retire`). */
  replaced: string[];
  /**
   * Drains, stops and removes the previous containers. The new version already serves when
   * rollout returns; the caller runs this after recording success, within the app's deploy slot.
   */
  retire(): Promise<string[]>;
}

export async function rollout(engine: Engine, plan: StackPlan, opts: RolloutOptions): Promise<RolloutResult> {
  const { log, signal } = opts;
  signal?.throwIfAborted();
  await ensureNetworks(engine, plan);
  await ensureVolumes(engine, plan);
  const old = await listAppContainers(engine, plan.app);
  const created: Created[] = [];
  const stoppedOld: AppContainer[] = [];
  try {
    for (const svc of plan.services) {
      signal?.throwIfAborted();
      for (const dep of svc.dependsOn) {
        const peer = created.find((c) => c.service === dep.service);
        if (!peer) continue;
        if (dep.condition !== 'service_started')
          log(`${svc.name}: waiting for the new ${dep.service} (${dep.condition})`);
        await waitForCondition(engine, peer.id, dep.condition, { timeoutMs: opts.gate.timeoutMs, signal });
      }
      const mine = old.filter((c) => c.service === svc.name);
      const inPlace = svc.publishesFixedHostPort;
      if (inPlace) {
        const running = mine.filter((c) => c.state === 'running' || c.state === 'restarting');
        log(
          `${svc.name}: publishes a fixed host port, so it cannot run twice: replacing it stop-then-start (brief interruption)`,
        );
        for (const c of running) {
          await stopContainer(engine, c.id);
          stoppedOld.push(c);
        }
      }
      // networkMode service:X joins a container's namespace and has no aliases of its own.
      const aliasable = !svc.networkMode && svc.networks.length > 0;
      const c = await createServiceContainer(engine, plan, svc.name, {
        deploymentId: opts.deploymentId,
        image: opts.images[svc.name],
        ...(aliasable && !inPlace && mine.length ? { aliases: [] } : {}),
      });
      created.push({
        service: svc.name,
        id: c.id,
        name: c.name,
        movesAlias: aliasable && !inPlace && mine.length > 0,
      });
      log(
        `${svc.name}: created ${c.name}${aliasable && !inPlace && mine.length ? ' next to the running one' : ''}`,
      );
      signal?.throwIfAborted();
      await startContainer(engine, c.id);
      log(`${svc.name}: started ${c.name}`);
    }
    await opts.onHealthChecking();
    for (const c of created) {
      signal?.throwIfAborted();
      const s = opts.settings.get(c.service) ?? { port: null, health_path: null };
      const how = await healthGate(engine, c.id, c.service, {
        ...opts.gate,
        port: s.port,
        healthPath: s.health_path,
        signal,
        log,
      });
      log(`${c.service}: ${c.name} is ready (${how})`);
    }
    signal?.throwIfAborted();
  } catch (e) {
    for (const c of created.reverse()) await removeContainer(engine, c.id).catch(() => {});
    for (const c of stoppedOld) {
      await startContainer(engine, c.id).then(
        () => log(`${c.service}: restarted the previous ${c.name}`),
        (err) => log(`${c.service}: could not restart the previous ${c.name}: ${(err as Error).message}`),
      );
    }
    throw e;
  }
  // The switch. From here on the new version serves; problems with the old ones are only logged.
  let proxied = false;
  if (opts.switchProxy) {
    proxied = await opts.switchProxy(created).catch((e) => {
      log(`proxy: could not switch the routes: ${(e as Error).message}`);
      return false;
    });
  }
  for (const c of created) {
    if (!c.movesAlias) continue;
    await setAliases(engine, plan, c.service, c.id, 'default');
  }
  if (created.some((c) => c.movesAlias)) await new Promise((r) => setTimeout(r, opts.overlapMs ?? 250));
  const newIds = new Set(created.map((c) => c.id));
  const leftovers = old.filter((c) => !newIds.has(c.id));
  // The old containers lose the service name but keep their address for a drain period: a client
  // that resolved the name just before the switch still connects. Then they stop, with their own
  // grace period.
  let drained = proxied;
  for (const c of leftovers) {
    for (const net of Object.keys(c.networks)) {
      drained = (await dropAliasKeepAddress(engine, c, net, log)) || drained;
    }
  }
  const retire = async () => {
    const removed: string[] = [];
    await Promise.all(
      leftovers.map(async (c) => {
        try {
          if (drained && opts.drain) await drain(engine, c, { ...opts.drain, log, signal });
          await stopContainer(engine, c.id);
          await removeContainer(engine, c.id);
          removed.push(c.name);
          log(`${c.service}: removed the previous ${c.name}`);
        } catch (e) {
          log(`${c.service}: could not remove the previous ${c.name}: ${(e as Error).message}`);
        }
      }),
    );
    return removed;
  };
  return { replaced: leftovers.map((c) => c.name), retire };
}

/**
 * Reconnects a container to a network with the same IPv4 address and no aliases. The engine
 * allows a fixed address only on networks with a configured subnet (ours have one); elsewhere
 * the container just leaves the network. Returns true when the address was kept.
 */
async function dropAliasKeepAddress(
  engine: Engine,
  c: AppContainer,
  net: string,
  log: (line: string) => void,
): Promise<boolean> {
  const detach = () =>
    guard(engine, () => engine.docker.getNetwork(net).disconnect({ Container: c.id, Force: true })).catch(
      (e) => {
        if (!isNotFound(e))
          log(`${c.service}: could not detach ${c.name} from ${net}: ${(e as Error).message}`);
      },
    );
  let ip = '';
  let configured = false;
  try {
    const info = await engine.docker.getContainer(c.id).inspect();
    ip = info.NetworkSettings?.Networks?.[net]?.IPAddress ?? '';
    const netInfo = await engine.docker.getNetwork(net).inspect();
    configured =
      (netInfo.IPAM?.Config ?? []).some((x: { Subnet?: string }) => !!x.Subnet) &&
      isOwned(engine, 'network', netInfo.Id, netInfo.Labels) &&
      !!netInfo.Labels?.[LABEL_APP];
  } catch {
    /* gone already */
  }
  await detach();
  if (!ip || !configured) return false;
  try {
    await engine.docker
      .getNetwork(net)
      .connect({ Container: c.id, EndpointConfig: { IPAMConfig: { IPv4Address: ip }, Aliases: [] } });
    return true;
  } catch (e) {
    log(`${c.service}: ${c.name} left ${net} without a drain period: ${(e as Error).message}`);
    return false;
  }
}

export { StackError };
