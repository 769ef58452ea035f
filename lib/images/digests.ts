// The exact image behind a reference: the registry's manifest digest when the engine got it from
// a registry (RepoDigests of the reference's repository), else the image id (an image only this
// engine has: built here, or loaded by hand). What a deployment records and a rollback runs.
import { guard, isNotFound, type Engine } from '../docker/engine.js';
import { digestReference, parseReference, repoDigestOf } from '../docker/reference.js';

export interface ImageFacts {
  id: string;
  /** The manifest digest of the reference's repository, when it came from a registry. */
  repoDigest: string | null;
}

export async function inspectImage(engine: Engine, ref: string): Promise<ImageFacts | null> {
  return guard(engine, async () => {
    try {
      const info = await engine.docker.getImage(ref).inspect();
      return { id: info.Id, repoDigest: parseReference(ref).digest ?? repoDigestOf(ref, info.RepoDigests) };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  });
}

/** `sha256:...` of what `ref` names on the engine now; null when the engine lacks it. */
export async function imageDigest(engine: Engine, ref: string): Promise<string | null> {
  const facts = await inspectImage(engine, ref);
  return facts ? (facts.repoDigest ?? facts.id) : null;
}

/** Every service's digest (the services whose image the engine lacks are left out). */
export async function imageDigests(
  engine: Engine,
  images: Record<string, string>,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [service, ref] of Object.entries(images)) {
    const d = await imageDigest(engine, ref);
    if (d) out[service] = d;
  }
  return out;
}

/**
 * The reference that runs exactly `digest` of `ref`'s image: `<repository>@<digest>` when the
 * engine knows it so, the image id when `digest` is one the engine has; null when neither is here.
 */
export async function presentExact(engine: Engine, ref: string, digest: string): Promise<string | null> {
  const byRepo = digestReference(ref, digest);
  if (await inspectImage(engine, byRepo)) return byRepo;
  const byId = await inspectImage(engine, digest);
  return byId && byId.id === digest ? digest : null;
}
