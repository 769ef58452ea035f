// Engine disk usage by kind, and a prune that reclaims only what this instance made and no
// longer needs (see pruneEngine), plus the build cache. Volumes are never pruned.
import { guard, isNotFound, statusOf, type Engine } from '../docker/engine.js';
import { LABEL_APP, LABEL_ROLE } from '../docker/names.js';
import { engineDf } from '../docker/df.js';
import { isOwned, ownedFilter } from '../docker/owner.js';
import type { LiveSet } from './store.js';
// lib/databases' label (not imported: that module pulls in the whole data layer).
const LABEL_DATABASE = 'svc.database';

interface Usage {
  count: number;
  size_bytes: number;
  reclaimable_bytes: number;
}

export interface DiskUsage {
  images: Usage;
  containers: Usage;
  volumes: Usage;
  build_cache: Usage;
  total_bytes: number;
}

type Df = {
  Images?: Array<{ Size?: number; SharedSize?: number; Containers?: number }>;
  Containers?: Array<{ SizeRw?: number; State?: string }>;
  Volumes?: Array<{ UsageData?: { Size?: number; RefCount?: number } }>;
  BuildCache?: Array<{ Size?: number; InUse?: boolean; Shared?: boolean }>;
  LayersSize?: number;
};

const pos = (n: number | undefined) => (typeof n === 'number' && n > 0 ? n : 0);

export async function diskUsage(engine: Engine): Promise<DiskUsage> {
  const df = await engineDf<Df>(engine);
  const images = df.Images ?? [];
  const containers = df.Containers ?? [];
  const volumes = df.Volumes ?? [];
  const cache = df.BuildCache ?? [];
  const imageSize = pos(df.LayersSize) || images.reduce((a, i) => a + pos(i.Size) - pos(i.SharedSize), 0);
  const out: DiskUsage = {
    images: {
      count: images.length,
      size_bytes: imageSize,
      reclaimable_bytes: images
        .filter((i) => !pos(i.Containers))
        .reduce((a, i) => a + pos(i.Size) - pos(i.SharedSize), 0),
    },
    containers: {
      count: containers.length,
      size_bytes: containers.reduce((a, c) => a + pos(c.SizeRw), 0),
      reclaimable_bytes: containers
        .filter((c) => c.State !== 'running')
        .reduce((a, c) => a + pos(c.SizeRw), 0),
    },
    volumes: {
      count: volumes.length,
      size_bytes: volumes.reduce((a, v) => a + pos(v.UsageData?.Size), 0),
      reclaimable_bytes: volumes
        .filter((v) => v.UsageData?.RefCount === 0)
        .reduce((a, v) => a + pos(v.UsageData?.Size), 0),
    },
    build_cache: {
      count: cache.length,
      size_bytes: cache.reduce((a, b) => a + pos(b.Size), 0),
      reclaimable_bytes: cache.filter((b) => !b.InUse && !b.Shared).reduce((a, b) => a + pos(b.Size), 0),
    },
    total_bytes: 0,
  };
  out.total_bytes =
    out.images.size_bytes + out.containers.size_bytes + out.volumes.size_bytes + out.build_cache.size_bytes;
  return out;
}

export interface PruneResult {
  reclaimed_bytes: number;
  images_deleted: number;
  containers_deleted: number;
  build_cache_bytes: number;
}

/**
 * A stopped container of ours that nothing needs: a helper (probe, seed, backup scratch), or the
 * container of an app or database this database no longer has. A stopped app's containers stay.
 */
function disposable(labels: Record<string, string>, live: LiveSet): boolean {
  const db = labels[LABEL_DATABASE];
  if (db) return !live.databases.has(db);
  const app = labels[LABEL_APP];
  const role = labels[LABEL_ROLE];
  if (app && role !== 'probe' && role !== 'seed') return !live.apps.has(app);
  return true;
}

const gone = (e: unknown) => isNotFound(e) || statusOf(e) === 409;

/**
 * Selects only what this instance made (its instance label, or ids it adopted): a container or
 * image anyone else put on the engine is never removed, whatever labels it carries or lacks.
 * Only exited or dead containers: one merely created may be an operation in progress.
 * `scope` narrows every step to objects carrying that label (`key=value`): tests on an engine
 * shared with other work prune only what they made. The build cache has no owner to tell (it is
 * the engine's cache, not an object): an unscoped prune empties its unused part, a scoped one leaves it.
 */
export async function pruneEngine(
  engine: Engine,
  live: LiveSet,
  opts: { scope?: string } = {},
): Promise<PruneResult> {
  return guard(engine, async () => {
    const scope = opts.scope ? [opts.scope] : [];
    const stopped = await engine.docker.listContainers({
      all: true,
      size: true,
      filters: { ...ownedFilter(engine, scope), status: ['exited', 'dead'] },
    });
    let c = 0;
    let containersDeleted = 0;
    for (const ct of stopped) {
      if (!isOwned(engine, 'container', ct.Id, ct.Labels) || !disposable(ct.Labels ?? {}, live)) continue;
      try {
        await engine.docker.getContainer(ct.Id).remove({ v: true });
        containersDeleted++;
        c += pos((ct as { SizeRw?: number }).SizeRw);
      } catch (e) {
        if (!gone(e)) throw e;
      }
    }
    // Images: dangling ones of ours, and any of ours whose app is gone; an app's kept rollback images stay.
    const images = await engine.docker.listImages({ all: false, filters: ownedFilter(engine, scope) });
    let i = 0;
    let imagesDeleted = 0;
    for (const img of images) {
      if (!isOwned(engine, 'image', img.Id, img.Labels)) continue;
      const app = img.Labels?.[LABEL_APP];
      const tags = (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
      if (app ? live.apps.has(app) : tags.length > 0) continue;
      try {
        for (const ref of tags.length ? tags : [img.Id]) await engine.docker.getImage(ref).remove();
        imagesDeleted++;
        i += pos(img.Size) - pos(img.SharedSize);
      } catch (e) {
        if (!gone(e)) throw e;
      }
    }
    const cache = opts.scope
      ? { SpaceReclaimed: 0 }
      : ((await engine.docker.pruneBuilder()) as { SpaceReclaimed?: number });
    const b = pos(cache.SpaceReclaimed);
    return {
      reclaimed_bytes: c + i + b,
      images_deleted: imagesDeleted,
      containers_deleted: containersDeleted,
      build_cache_bytes: b,
    };
  });
}
