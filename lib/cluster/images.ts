// Images reach the nodes of a swarm through a registry: what the control plane built (or an image
// app's image that only this engine has) is tagged under the registry, pushed, and referred to by
// digest, so every node runs the same bytes whatever the tag points at later.
import { guard, isNotFound, StackError, type Engine } from '../docker/engine.js';

interface PushEvent {
  error?: string;
  errorDetail?: { message?: string };
  aux?: { Digest?: string };
}

/** `[repository without a registry host, tag]` of a local reference. */
export function splitLocalRef(ref: string): { path: string; tag: string } {
  let rest = ref.split('@')[0]!;
  const first = rest.split('/')[0]!;
  if (rest.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost'))
    rest = rest.slice(first.length + 1);
  const slash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  const [path, tag] = colon > slash ? [rest.slice(0, colon), rest.slice(colon + 1)] : [rest, 'latest'];
  return { path: path.includes('/') ? path : `library/${path}`, tag };
}

/**
 * Whether the nodes must get the image from us: it is here, and no registry digest of its own
 * repository is recorded (a digest from our own earlier push, under the registry's name, does not
 * count: the nodes cannot pull the plain name).
 */
export async function onlyLocal(engine: Engine, ref: string): Promise<boolean> {
  try {
    const info = await guard(engine, () => engine.docker.getImage(ref).inspect());
    const repo = ref.split('@')[0]!.replace(/:[^/:]*$/, '');
    return !(info.RepoDigests ?? []).some((d) => d.split('@')[0] === repo);
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

/**
 * Tags `localRef` as `<registry>/<path>:<tag>`, pushes it, and returns `<registry>/<path>@<digest>`.
 * The push's own stream is read to the end: an error in it fails the deploy with the registry's words.
 */
/** What a push presents to the registry (lib/cluster/registry.ts `registryAuth`; empty: nothing). */
export type RegistryAuth =
  { username: string; password: string; serveraddress: string } | Record<string, never>;

export async function publishImage(
  engine: Engine,
  localRef: string,
  registry: string,
  signal?: AbortSignal,
  auth: RegistryAuth = {},
): Promise<string> {
  const { path, tag } = splitLocalRef(localRef);
  const repo = `${registry}/${path}`;
  return guard(engine, async () => {
    await engine.docker.getImage(localRef).tag({ repo, tag });
    // An auth header always (engines refuse a push without one): the registry's account, or empty.
    const pushOpts = { tag, authconfig: auth, abortSignal: signal };
    const stream = await engine.docker.getImage(repo).push(pushOpts);
    const events = await new Promise<PushEvent[]>((resolve, reject) =>
      engine.docker.modem.followProgress(stream, (err: Error | null, out: PushEvent[]) =>
        err ? reject(err) : resolve(out),
      ),
    );
    const failed = events.find((e) => e.error || e.errorDetail);
    if (failed)
      throw new StackError(
        `pushing ${repo}:${tag} failed: ${failed.errorDetail?.message ?? failed.error ?? 'unknown error'}`,
      );
    const digest = events.map((e) => e.aux?.Digest).find((d) => d && /^sha256:[0-9a-f]{64}$/.test(d));
    if (!digest) throw new StackError(`pushing ${repo}:${tag} reported no digest`);
    return `${repo}@${digest}`;
  });
}

/**
 * Every service's image as the nodes will pull it: images only this engine has are pushed to the
 * registry (by digest); ones already pushed, and ones that came from a registry, are kept as named.
 */
export async function publishImages(
  engine: Engine,
  images: Record<string, string>,
  registry: string,
  log: (line: string) => void,
  signal?: AbortSignal,
  auth: RegistryAuth = {},
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [service, ref] of Object.entries(images)) {
    signal?.throwIfAborted();
    if (ref.startsWith(`${registry}/`) && ref.includes('@sha256:')) {
      out[service] = ref;
      continue;
    }
    if (!(await onlyLocal(engine, ref))) {
      log(`${service}: ${ref} comes from a registry: the nodes pull it themselves`);
      out[service] = ref;
      continue;
    }
    log(`${service}: pushing ${ref} to the cluster registry ${registry}`);
    out[service] = await publishImage(engine, ref, registry, signal, auth);
    log(`${service}: pushed as ${out[service]}`);
  }
  return out;
}
