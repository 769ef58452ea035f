// Building a generated plan as a deploy does, for the engine tests and `npm run bench:build`:
// detection over the checkout on disk, SVC_IMAGE_MAP applied to the Dockerfile by the product's
// own function, the build through lib/docker's buildImage (dockerode, the legacy builder), then a
// container run as the image says (its USER, PORT and CMD) with every capability dropped.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { detect, diskFiles, isPlan, mapDockerfileImages, type Plan } from '#lib/buildplan/index.js';
import { buildImage, type Engine } from '#lib/docker/index.js';
import { ownerLabels } from '#lib/docker/owner.js';
import { poll } from './wait.js';

/** The generated Dockerfile's name in the context (dotted, so the static plan's tidy drops it). */
export const PLAN_DOCKERFILE = '.svc-plan.Dockerfile';

export async function planOfDir(dir: string): Promise<Plan> {
  const r = await detect(diskFiles(dir));
  if (!isPlan(r)) throw new Error(`not detectable: ${r.message}`);
  return r;
}

export interface Built {
  imageId: string;
  log: string[];
}

/** Builds dir with `dockerfile` (the plan's text, or a hand-written one) after mapping its images. */
export async function buildWithMap(
  engine: Engine,
  dir: string,
  dockerfile: string,
  imageMap: Record<string, string>,
  tag: string,
  label: string,
): Promise<Built> {
  await writeFile(join(dir, PLAN_DOCKERFILE), mapDockerfileImages(dockerfile, imageMap));
  const log: string[] = [];
  const { imageId } = await buildImage(engine, {
    contextDir: dir,
    dockerfile: PLAN_DOCKERFILE,
    tag,
    labels: { 'svc.test': label },
    onLog: (l) => log.push(l),
  });
  return { imageId, log };
}

export interface Running {
  id: string;
  url: string;
}

/** Starts the image as it is (no user, env or command given), its port on a loopback port. */
export async function runImage(engine: Engine, tag: string, port: number, label: string): Promise<Running> {
  const key = `${port}/tcp`;
  const c = await engine.docker.createContainer({
    Image: tag,
    Labels: { ...ownerLabels(engine), 'svc.test': label },
    ExposedPorts: { [key]: {} },
    HostConfig: {
      PortBindings: { [key]: [{ HostIp: '127.0.0.1', HostPort: '' }] },
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
    },
  });
  await c.start();
  const info = await c.inspect();
  const host = info.NetworkSettings.Ports[key]?.[0]?.HostPort;
  if (!host) {
    // The container is gone already: say why (an exec refused under the dropped capabilities, say).
    const why = info.State.Running
      ? 'it runs'
      : `it exited (${info.State.ExitCode}): ${await logsOf(engine, c.id)}`;
    throw new Error(`${tag}: no host port for ${key}; ${why}`);
  }
  return { id: c.id, url: `http://127.0.0.1:${host}` };
}

/** The body of GET url+path once the app answers 200 (it may take a moment to listen). */
export async function fetchBody(engine: Engine, r: Running, path: string): Promise<string> {
  return poll(
    `${r.url}${path} to answer`,
    async () => {
      const st = await engine.docker.getContainer(r.id).inspect();
      if (!st.State.Running)
        throw new Error(`the container exited (${st.State.ExitCode}): ${await logsOf(engine, r.id)}`);
      // A timer of our own: AbortSignal.timeout's is unref'd, and a request that the engine's port
      // proxy holds before the app listens would then let a plain script (the bench) exit mid-wait.
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), 5000);
      try {
        const res = await fetch(`${r.url}${path}`, { signal: ac.signal });
        if (res.status !== 200) throw new Error(`status ${res.status}`);
        return await res.text();
      } finally {
        clearTimeout(timer);
      }
    },
    60_000,
    250,
  );
}

export async function logsOf(engine: Engine, id: string): Promise<string> {
  const buf = await engine.docker.getContainer(id).logs({ stdout: true, stderr: true, tail: 40 });
  return buf.toString('utf8').replace(/[\x00-\x08]/g, '');
}

const PATH_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** Whether the image has `path` (a file or folder), looked up in a created, never started container. */
export async function imagePaths(
  engine: Engine,
  tag: string,
  label: string,
  paths: string[],
): Promise<Record<string, boolean>> {
  const c = await engine.docker.createContainer({
    Image: tag,
    Entrypoint: ['/nonexistent'],
    Labels: { ...ownerLabels(engine), 'svc.test': label },
  });
  try {
    const out: Record<string, boolean> = {};
    for (const p of paths) {
      out[p] = await c.infoArchive({ path: p }).then(
        () => true,
        (e: { statusCode?: number }) => {
          if (e.statusCode === 404) return false;
          throw e;
        },
      );
    }
    return out;
  } finally {
    await c.remove({ force: true });
  }
}

/** Programs from `names` found in the image's usual PATH folders. */
export async function programsIn(
  engine: Engine,
  tag: string,
  label: string,
  names: string[],
): Promise<string[]> {
  const candidates = names.flatMap((n) => PATH_DIRS.map((d) => `${d}/${n}`));
  const found = await imagePaths(engine, tag, label, candidates);
  return names.filter((n) => PATH_DIRS.some((d) => found[`${d}/${n}`]));
}
