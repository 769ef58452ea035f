// Engine disk usage by kind, and a prune that reclaims only what no app owns: dangling images
// (never one labelled with an app: those are kept rollback images), stopped containers without
// an app label, and the build cache. Volumes are never pruned.
import { guard, type Engine } from '../docker/engine.js';
import { LABEL_APP } from '../docker/names.js';

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
  const df = (await guard(engine, () => engine.docker.df())) as Df;
  const images = df.Images ?? [];
  const containers = df.Containers ?? [];
  const volumes = df.Volumes ?? [];
  const cache = df.BuildCache ?? [];
  const imageSize = pos(df.LayersSize) || images.reduce((a, i) => a + pos(i.Size) - pos(i.SharedSize), 0);
  const out: DiskUsage = {
    images: {
      count: images.length,
      size_bytes: imageSize,
      reclaimable_bytes: images.filter((i) => !pos(i.Containers)).reduce((a, i) => a + pos(i.Size) - pos(i.SharedSize), 0),
    },
    containers: {
      count: containers.length,
      size_bytes: containers.reduce((a, c) => a + pos(c.SizeRw), 0),
      reclaimable_bytes: containers.filter((c) => c.State !== 'running').reduce((a, c) => a + pos(c.SizeRw), 0),
    },
    volumes: {
      count: volumes.length,
      size_bytes: volumes.reduce((a, v) => a + pos(v.UsageData?.Size), 0),
      reclaimable_bytes: volumes.filter((v) => v.UsageData?.RefCount === 0).reduce((a, v) => a + pos(v.UsageData?.Size), 0),
    },
    build_cache: {
      count: cache.length,
      size_bytes: cache.reduce((a, b) => a + pos(b.Size), 0),
      reclaimable_bytes: cache.filter((b) => !b.InUse && !b.Shared).reduce((a, b) => a + pos(b.Size), 0),
    },
    total_bytes: 0,
  };
  out.total_bytes = out.images.size_bytes + out.containers.size_bytes + out.volumes.size_bytes + out.build_cache.size_bytes;
  return out;
}

export interface PruneResult {
  reclaimed_bytes: number;
  images_deleted: number;
  containers_deleted: number;
  build_cache_bytes: number;
}

/**
 * `scope` narrows every step to objects carrying that label (`key=value`): tests on an engine
 * shared with other work prune only what they made. The build cache has no labels: a scoped
 * prune leaves it alone.
 */
export async function pruneEngine(engine: Engine, opts: { scope?: string } = {}): Promise<PruneResult> {
  return guard(engine, async () => {
    const scope = opts.scope ? { label: [opts.scope] } : {};
    const containers = (await engine.docker.pruneContainers({ filters: JSON.stringify({ ...scope, 'label!': [LABEL_APP] }) })) as { ContainersDeleted?: string[] | null; SpaceReclaimed?: number };
    const images = (await engine.docker.pruneImages({ filters: JSON.stringify({ ...scope, dangling: ['true'], 'label!': [LABEL_APP] }) })) as {
      ImagesDeleted?: unknown[] | null;
      SpaceReclaimed?: number;
    };
    const cache = opts.scope ? { SpaceReclaimed: 0 } : ((await engine.docker.pruneBuilder()) as { SpaceReclaimed?: number });
    const c = pos(containers.SpaceReclaimed);
    const i = pos(images.SpaceReclaimed);
    const b = pos(cache.SpaceReclaimed);
    return {
      reclaimed_bytes: c + i + b,
      images_deleted: images.ImagesDeleted?.length ?? 0,
      containers_deleted: containers.ContainersDeleted?.length ?? 0,
      build_cache_bytes: b,
    };
  });
}
