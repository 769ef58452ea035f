// Whole-stack operations. stackUp replaces each service in place (stop old, start new), in
// dependency order; zero-downtime replacement is the deploy pipeline's job, built from the
// same pieces in containers.ts.
import type { Engine } from './engine.js';
import { EngineConflictError, StackError, guard, isNotFound, statusOf } from './engine.js';
import { assertAppName } from './names.js';
import type { StackPlan } from './plan.js';
import { ensureNetworks, ensureVolumes, listAppNetworks, listAppVolumes } from './resources.js';
import {
  createServiceContainer,
  listAppContainers,
  removeContainer,
  startContainer,
  stopContainer,
  waitForCondition,
  type AppContainer,
} from './containers.js';

export interface UpOptions {
  deploymentId: string;
  signal?: AbortSignal;
  onLog?: (line: string) => void;
  /** Per dependency wait (healthy / completed). Default 120 s. */
  waitTimeoutMs?: number;
  /** Image per service, overriding the plan (e.g. a rollback's kept image). */
  images?: Record<string, string>;
  /** Remove containers of services no longer in the plan (default true). */
  removeOrphans?: boolean;
}

export interface UpResult {
  services: { name: string; containerId: string; containerName: string; reused: boolean }[];
  removed: string[];
}

export async function stackUp(engine: Engine, plan: StackPlan, opts: UpOptions): Promise<UpResult> {
  const log = opts.onLog ?? (() => {});
  const signal = opts.signal;
  signal?.throwIfAborted();
  await ensureNetworks(engine, plan);
  await ensureVolumes(engine, plan);
  const existing = await listAppContainers(engine, plan.app);
  const current = new Map<string, string>();
  const result: UpResult = { services: [], removed: [] };
  for (const svc of plan.services) {
    signal?.throwIfAborted();
    for (const dep of svc.dependsOn) {
      const depId = current.get(dep.service);
      if (!depId) continue;
      if (dep.condition !== 'service_started')
        log(`${svc.name}: waiting for ${dep.service} (${dep.condition})`);
      try {
        await waitForCondition(engine, depId, dep.condition, { timeoutMs: opts.waitTimeoutMs, signal });
      } catch (e) {
        if (signal?.aborted) throw e;
        throw new StackError(
          `${svc.name}: dependency ${dep.service} failed: ${(e as Error).message}`,
          svc.name,
          { cause: e },
        );
      }
    }
    const mine = existing.filter((c) => c.service === svc.name);
    const keep = mine.find((c) => c.deployment === opts.deploymentId && c.state === 'running');
    if (keep) {
      log(`${svc.name}: ${keep.name} already running for this deployment`);
      current.set(svc.name, keep.id);
      result.services.push({ name: svc.name, containerId: keep.id, containerName: keep.name, reused: true });
      for (const c of mine)
        if (c !== keep) {
          await removeContainer(engine, c.id);
          result.removed.push(c.name);
        }
      continue;
    }
    for (const c of mine) {
      log(`${svc.name}: removing ${c.name}`);
      await stopContainer(engine, c.id);
      await removeContainer(engine, c.id);
      result.removed.push(c.name);
    }
    const created = await createServiceContainer(engine, plan, svc.name, {
      deploymentId: opts.deploymentId,
      image: opts.images?.[svc.name],
    });
    log(`${svc.name}: created ${created.name}`);
    await startContainer(engine, created.id);
    log(`${svc.name}: started ${created.name}`);
    current.set(svc.name, created.id);
    result.services.push({
      name: svc.name,
      containerId: created.id,
      containerName: created.name,
      reused: false,
    });
  }
  if (opts.removeOrphans ?? true) {
    const wanted = new Set(plan.services.map((s) => s.name));
    for (const c of existing) {
      if (!wanted.has(c.service)) {
        log(`${c.service}: removing orphan ${c.name}`);
        await removeContainer(engine, c.id);
        result.removed.push(c.name);
      }
    }
  }
  return result;
}

async function targets(engine: Engine, app: string, service?: string): Promise<AppContainer[]> {
  assertAppName(app);
  return listAppContainers(engine, app, service ? { service } : {});
}

/** Stops the app's containers (or one service's). Returns the container names touched. */
export async function stackStop(engine: Engine, app: string, service?: string): Promise<string[]> {
  const list = await targets(engine, app, service);
  await Promise.all(list.map((c) => stopContainer(engine, c.id)));
  return list.map((c) => c.name);
}

/** Starts them again, oldest container first (the order they were created in by stackUp). */
export async function stackStart(engine: Engine, app: string, service?: string): Promise<string[]> {
  const list = await targets(engine, app, service);
  for (const c of list) await startContainer(engine, c.id);
  return list.map((c) => c.name);
}

export async function stackRestart(engine: Engine, app: string, service?: string): Promise<string[]> {
  const list = await targets(engine, app, service);
  await guard(engine, async () => {
    for (const c of list) await engine.docker.getContainer(c.id).restart();
  });
  return list.map((c) => c.name);
}

export interface RemoveResult {
  containers: string[];
  networks: string[];
  removedVolumes: string[];
  /** Volumes left in place because removal was not asked for: deleting data is never a side effect. */
  keptVolumes: string[];
  /** Containers svc does not manage that were attached to the app's networks: detached, never stopped. */
  detached: string[];
}

/**
 * Removes the app's containers, then networks, then (only when asked) volumes. Each step
 * treats "already gone" as done, so a retry after a failure midway finishes the job; it returns
 * only when nothing of the app is left (kept volumes aside), and throws naming what is.
 */
export async function stackRemove(
  engine: Engine,
  app: string,
  opts: { volumes: boolean },
): Promise<RemoveResult> {
  assertAppName(app);
  // Its one-off containers (job runs, commands) go with it.
  const containers = await listAppContainers(engine, app, { runs: true });
  for (const c of containers) await removeContainer(engine, c.id);
  const networks = await listAppNetworks(engine, app);
  const detached: string[] = [];
  await guard(engine, async () => {
    for (const n of networks) {
      const net = engine.docker.getNetwork(n.id);
      let attached: Record<string, { Name?: string }> = {};
      try {
        attached =
          ((await net.inspect()) as { Containers?: Record<string, { Name?: string }> }).Containers ?? {};
      } catch (e) {
        if (isNotFound(e)) continue;
        throw e;
      }
      // Our own containers are gone by now: whatever is still attached was connected by someone
      // else (`docker network connect`). It leaves the network and is otherwise left alone.
      for (const [id, endpoint] of Object.entries(attached)) {
        try {
          await net.disconnect({ Container: id, Force: true });
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
        detached.push(endpoint.Name || id.slice(0, 12));
      }
      try {
        await net.remove();
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  });
  const volumes = await listAppVolumes(engine, app);
  const removedVolumes: string[] = [];
  if (opts.volumes) {
    await guard(engine, async () => {
      for (const v of volumes) {
        try {
          await engine.docker.getVolume(v).remove();
        } catch (e) {
          if (isNotFound(e)) continue;
          if (statusOf(e) === 409)
            throw new EngineConflictError(
              `volume "${v}" is in use by ${await volumeUsers(engine, v)}, which svc does not manage and never stops; stop it or remove it, then delete the app again`,
            );
          throw e;
        }
        removedVolumes.push(v);
      }
    });
  }
  // A Swarm overlay network leaves the manager's list a moment after its removal was accepted.
  const removedIds = new Set(networks.map((n) => n.id));
  let nets = await listAppNetworks(engine, app);
  for (const until = Date.now() + 15_000; nets.some((n) => removedIds.has(n.id)) && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, 250));
    nets = await listAppNetworks(engine, app);
  }
  const left = [
    ...(await listAppContainers(engine, app, { runs: true })).map((c) => `container ${c.name}`),
    ...nets.map((n) => `network ${n.name}`),
    ...(opts.volumes ? (await listAppVolumes(engine, app)).map((v) => `volume ${v}`) : []),
  ];
  if (left.length)
    throw new EngineConflictError(
      `app "${app}" is not fully removed: ${left.join(', ')} still exist (created meanwhile?); delete it again`,
    );
  return {
    containers: containers.map((c) => c.name),
    networks: networks.map((n) => n.name),
    removedVolumes,
    keptVolumes: opts.volumes ? [] : volumes,
    detached,
  };
}

async function volumeUsers(engine: Engine, volume: string): Promise<string> {
  const users = await engine.docker
    .listContainers({ all: true, filters: { volume: [volume] } })
    .catch(() => []);
  const names = users.map((c) => (c.Names[0] ?? c.Id.slice(0, 12)).replace(/^\//, ''));
  return names.length ? `container ${names.join(', ')}` : 'a container';
}
