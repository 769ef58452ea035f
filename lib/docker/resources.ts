// Networks and volumes of an app: created when missing, reused only when they carry our labels.
import type { Engine } from './engine.js';
import { EngineConflictError, guard, isNotFound } from './engine.js';
import { LABEL_APP, LABEL_NETWORK, LABEL_VOLUME } from './names.js';
import { isOwned, ownedFilter, ownerLabels } from './owner.js';
import type { StackPlan } from './plan.js';
import { seedVolume } from './binds.js';

/**
 * The app's network `n` as the engine has it, or undefined when there is none. One of that name
 * that is not ours, or is another app's or another network's, is a conflict: never reused.
 */
export async function existingAppNetwork(
  engine: Engine,
  app: string,
  n: { name: string; key: string },
): Promise<{ Id: string; Driver?: string; Labels?: Record<string, string> } | undefined> {
  let existing: { Id: string; Driver?: string; Labels?: Record<string, string> } | undefined;
  try {
    existing = await engine.docker.getNetwork(n.name).inspect();
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  if (
    existing &&
    (!isOwned(engine, 'network', existing.Id, existing.Labels) ||
      existing.Labels?.[LABEL_APP] !== app ||
      existing.Labels?.[LABEL_NETWORK] !== n.key)
  )
    throw new EngineConflictError(`network "${n.name}" exists but does not belong to app "${app}"`);
  return existing;
}

export async function ensureNetworks(engine: Engine, plan: StackPlan): Promise<void> {
  await guard(engine, async () => {
    for (const n of plan.networks) {
      if (await existingAppNetwork(engine, plan.app, n)) continue;
      await createWithSubnet(engine, {
        Name: n.name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Internal: n.internal,
        Labels: { ...n.labels, ...ownerLabels(engine), [LABEL_APP]: plan.app, [LABEL_NETWORK]: n.key },
      });
    }
  });
}

// App networks get an explicit subnet: only then does the engine let a container be reconnected
// with the same address, which is how a blue/green switch drains the old container without its
// address vanishing under a client that has just resolved it.
const POOL_BASE = (172 << 24) | (30 << 16);
const POOL_SUBNETS = 256;

function parseV4Cidr(cidr: string): [number, number] | null {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) return null;
  const ip = ((+m[1]! << 24) | (+m[2]! << 16) | (+m[3]! << 8) | +m[4]!) >>> 0;
  const bits = +m[5]!;
  const size = bits === 0 ? 2 ** 32 : 2 ** (32 - bits);
  const start = Math.floor(ip / size) * size;
  return [start, start + size - 1];
}

async function createWithSubnet(
  engine: Engine,
  opts: import('dockerode').NetworkCreateOptions,
): Promise<void> {
  const nets = await engine.docker.listNetworks();
  const used: Array<[number, number]> = [];
  for (const n of nets)
    for (const c of n.IPAM?.Config ?? []) {
      const r = c.Subnet ? parseV4Cidr(c.Subnet) : null;
      if (r) used.push(r);
    }
  for (let i = 0; i < POOL_SUBNETS; i++) {
    const start = (POOL_BASE + i * 256) >>> 0;
    const end = start + 255;
    if (used.some(([a, b]) => a <= end && start <= b)) continue;
    const subnet = `172.30.${i}.0/24`;
    try {
      await engine.docker.createNetwork({
        ...opts,
        IPAM: { Driver: 'default', Config: [{ Subnet: subnet }] },
      });
      return;
    } catch (e) {
      // Another network took this range meanwhile: try the next one.
      if (/overlap/i.test(String((e as Error).message))) continue;
      throw e;
    }
  }
  // Pool exhausted: the engine picks; blue/green then falls back to a plain disconnect.
  await engine.docker.createNetwork(opts);
}

export async function ensureVolumes(engine: Engine, plan: StackPlan): Promise<void> {
  await guard(engine, async () => {
    for (const v of plan.volumes) {
      let existing: { Name: string; Labels?: Record<string, string> | null } | undefined;
      try {
        existing = await engine.docker.getVolume(v.name).inspect();
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      if (existing) {
        if (
          !isOwned(engine, 'volume', existing.Name, existing.Labels) ||
          existing.Labels?.[LABEL_APP] !== plan.app
        )
          throw new EngineConflictError(`volume "${v.name}" exists but does not belong to app "${plan.app}"`);
        continue;
      }
      await engine.docker.createVolume({
        Name: v.name,
        Driver: 'local',
        Labels: { ...v.labels, ...ownerLabels(engine), [LABEL_APP]: plan.app, [LABEL_VOLUME]: v.key },
      });
      if (v.seed) {
        try {
          await seedVolume(engine, plan.app, v.name, v.seed);
        } catch (e) {
          // Half-filled data would be kept as the app's own from now on: start again next time.
          await engine.docker
            .getVolume(v.name)
            .remove()
            .catch(() => {});
          throw e;
        }
      }
    }
  });
}

export async function listAppNetworks(engine: Engine, app: string): Promise<{ id: string; name: string }[]> {
  return guard(engine, async () => {
    const nets = await engine.docker.listNetworks({ filters: ownedFilter(engine, [`${LABEL_APP}=${app}`]) });
    return nets
      .filter((n) => isOwned(engine, 'network', n.Id, n.Labels) && n.Labels?.[LABEL_APP] === app)
      .map((n) => ({ id: n.Id, name: n.Name }));
  });
}

export async function listAppVolumes(engine: Engine, app: string): Promise<string[]> {
  return guard(engine, async () => {
    const { Volumes } = await engine.docker.listVolumes({
      filters: ownedFilter(engine, [`${LABEL_APP}=${app}`]),
    });
    return (Volumes ?? [])
      .filter((v) => isOwned(engine, 'volume', v.Name, v.Labels) && v.Labels?.[LABEL_APP] === app)
      .map((v) => v.Name)
      .sort();
  });
}
