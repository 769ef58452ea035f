// Bind mounts, from the plan to the engine. The engine follows symlinks in a bind source each
// time it starts the container, so a source is safe only when no container can write any folder
// on its path. Every source is therefore a real path (no symlink anywhere), checked against the
// host paths that must never be mounted, checked against what other containers may write, and
// checked once more from the created container's own Mounts before it starts.
import { realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { within } from '../util/paths.js';
import type { Engine } from './engine.js';
import { StackError } from './engine.js';
import { LABEL_APP, LABEL_MANAGED, LABEL_ROLE } from './names.js';
import { ownerLabels } from './owner.js';
import { packTree } from './build.js';

/** On volumes made for writable relative binds: the bind source as the compose file wrote it. */
export const LABEL_BIND = 'svc.bind';

/** What one relative bind of a compose file becomes (prepared per deployment by lib/deploy/mounts.ts). */
export type BindSource =
  /** A real path inside the deployment's private tree. */
  | { kind: 'bind'; source: string }
  /** A named volume of the app (its key), filled from `seed` when it is created. */
  | { kind: 'volume'; key: string; seed: string | null }
  | { kind: 'refused'; reason: string };

export type BindTable = Map<string, BindSource>;

/** `./data/`, `data` and `./data` are the same source; `.` and `./` the repository root. */
export function relativeKey(source: string): string {
  const n = posix.normalize(source).replace(/\/+$/, '');
  return n === '' || n === '.' ? '.' : n.replace(/^\.\//, '');
}

/** As a compose file writes it: `./data`, `.`. */
export function showBind(source: string): string {
  const k = relativeKey(source);
  return k === '.' ? '.' : `./${k}`;
}

export function bindKey(source: string, readOnly: boolean): string {
  return `${relativeKey(source)}\u0000${readOnly ? 'ro' : 'rw'}`;
}

export function lookupBind(table: BindTable, source: string, readOnly: boolean): BindSource | undefined {
  return table.get(bindKey(source, readOnly));
}

const SOCKETS = [
  '/var/run/docker.sock',
  '/run/docker.sock',
  '/run/containerd/containerd.sock',
  '/var/run/containerd/containerd.sock',
];
const HOST_TREES = ['/proc', '/sys', '/dev', '/boot', '/var/lib/docker', '/var/lib/containerd'];

/** Why a real host path must never be a bind source, or null. */
export async function hostPathProblem(real: string): Promise<string | null> {
  if (real === '/') return "the host's root directory is never mounted";
  const sockets = new Set(SOCKETS);
  for (const s of SOCKETS) {
    const r = await realpath(s).catch(() => null);
    if (r) sockets.add(r);
  }
  for (const s of sockets)
    if (within(real, s) || within(s, real))
      return `bind mounts of the engine's socket (${s}) or a directory holding it are refused`;
  for (const t of HOST_TREES)
    if (within(t, real) || within(real, t)) return `bind mounts of ${t} are refused`;
  return null;
}

interface PlannedBind {
  source: string;
  target: string;
  readOnly: boolean;
}

function plannedBinds(config: Docker.ContainerCreateOptions): PlannedBind[] {
  return (config.HostConfig?.Mounts ?? [])
    .filter((m) => m.Type === 'bind')
    .map((m) => ({ source: m.Source, target: m.Target, readOnly: !!m.ReadOnly }));
}

/**
 * Before creating a container: every bind source is still its own real path and allowed, and no
 * container on the engine can write a folder above it.
 */
export async function checkBindsBeforeCreate(
  engine: Engine,
  service: string,
  config: Docker.ContainerCreateOptions,
): Promise<void> {
  if (config.HostConfig?.Binds?.length)
    throw new StackError(`${service}: HostConfig.Binds is never used by the control plane; refused`, service);
  const binds = plannedBinds(config);
  if (!binds.length) return;
  for (const b of binds) await checkSource(service, b.source);
  const writable: { name: string; source: string }[] = [];
  for (const c of await engine.docker.listContainers({ all: true })) {
    for (const m of c.Mounts ?? [])
      if (m.Type === 'bind' && m.RW)
        writable.push({ name: (c.Names?.[0] ?? c.Id).replace(/^\//, ''), source: m.Source });
  }
  for (const b of binds) {
    const above = writable.find((w) => w.source !== b.source && within(w.source, b.source));
    if (above)
      throw new StackError(
        `${service}: bind source ${b.source} lies inside ${above.source}, which container ${above.name} can write; refused`,
        service,
      );
  }
}

async function checkSource(service: string, source: string): Promise<void> {
  let real: string;
  try {
    real = await realpath(source);
  } catch {
    throw new StackError(`${service}: bind source ${source} does not exist`, service);
  }
  if (real !== source)
    throw new StackError(
      `${service}: bind source ${source} now resolves to ${real} (a symlink appeared on its path); refused`,
      service,
    );
  const problem = await hostPathProblem(real);
  if (problem) throw new StackError(`${service}: ${problem}`, service);
}

/**
 * After creating, before starting: the engine recorded exactly the planned binds (same source,
 * same target, same mode, nothing more), and each source is still its own real path. Returns
 * the reason of a mismatch, or null.
 */
export async function verifyCreatedMounts(
  engine: Engine,
  id: string,
  service: string,
  config: Docker.ContainerCreateOptions,
): Promise<string | null> {
  const info = await engine.docker.getContainer(id).inspect();
  const planned = plannedBinds(config);
  const seen = (info.Mounts ?? []).filter((m) => m.Type === 'bind');
  if (seen.length !== planned.length)
    return `the container has ${seen.length} bind mount(s) where ${planned.length} were planned`;
  for (const m of seen) {
    const p = planned.find((x) => x.target === m.Destination);
    if (!p) return `an unplanned bind mount at ${m.Destination}`;
    if (m.Source !== p.source)
      return `the bind mount at ${m.Destination} comes from ${m.Source}, not ${p.source}`;
    if (m.RW === p.readOnly)
      return `the bind mount at ${m.Destination} is ${m.RW ? 'writable' : 'read-only'} against the plan`;
    try {
      await checkSource(service, m.Source);
    } catch (e) {
      return (e as Error).message;
    }
  }
  return null;
}

/** A tiny image with no files, imported once: it only carries volumes for archive uploads. */
export const EMPTY_IMAGE = 'svc/empty:1';

export async function ensureEmptyImage(engine: Engine): Promise<void> {
  try {
    await engine.docker.getImage(EMPTY_IMAGE).inspect();
    return;
  } catch {
    /* import it */
  }
  // Two zero blocks: a tar archive with no entries.
  const stream = await engine.docker.importImage(Readable.from([Buffer.alloc(1024)]), {
    repo: 'svc/empty',
    tag: '1',
    changes: [`LABEL ${LABEL_MANAGED}=true`],
  });
  await new Promise<void>((resolve, reject) =>
    engine.docker.modem.followProgress(stream, (err) => (err ? reject(err) : resolve())),
  );
}

/**
 * Fills a new volume with a folder of the deployment's copy of the repository. The engine does
 * the writing: the folder is sent as an archive to a container that is created, never started,
 * and removed again.
 */
export async function seedVolume(
  engine: Engine,
  app: string,
  volume: string,
  dir: string,
  maxBytes = 1024 ** 3,
): Promise<void> {
  await ensureEmptyImage(engine);
  const c = await engine.docker.createContainer({
    Image: EMPTY_IMAGE,
    Cmd: ['/never-started'],
    Labels: { ...ownerLabels(engine), [LABEL_APP]: app, [LABEL_ROLE]: 'seed' },
    HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: volume, Target: '/seed' }] },
  });
  try {
    await c.putArchive((await packTree(dir, maxBytes)) as unknown as NodeJS.ReadableStream, {
      path: '/seed',
    });
  } finally {
    await c.remove({ force: true }).catch(() => {});
  }
}
