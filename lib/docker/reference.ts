// An image reference taken apart the way the engine reads it: the first path component is a
// registry host only when it looks like one (a dot, a port, or `localhost`); otherwise the image
// lives on Docker Hub (`docker.io`), whose one-word names sit under `library/`. Pure functions:
// the pull path, digests, rollbacks and credentials all match on what this answers.

export const DOCKER_HUB = 'docker.io';

export interface ImageReference {
  /** The registry host as written (`docker.io` for an unqualified name), with its port. */
  registry: string;
  /** The repository path inside the registry (`library/nginx`, `team/app`). */
  path: string;
  tag: string | null;
  /** `sha256:<64 hex>` when the reference names a digest. */
  digest: string | null;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function isDigest(s: string): boolean {
  return DIGEST.test(s);
}

export function parseReference(ref: string): ImageReference {
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | null = null;
  const slash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > slash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const first = rest.split('/')[0]!;
  let registry = DOCKER_HUB;
  if (rest.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = first;
    rest = rest.slice(first.length + 1);
  }
  const path = registry === DOCKER_HUB && !rest.includes('/') ? `library/${rest}` : rest;
  return { registry, path, tag, digest: digest && isDigest(digest) ? digest : null };
}

/** The repository as the engine records it in RepoDigests (`nginx`, `127.0.0.1:5000/team/app`). */
export function familiarRepository(ref: ImageReference): string {
  if (ref.registry !== DOCKER_HUB) return `${ref.registry}/${ref.path}`;
  return ref.path.startsWith('library/') ? ref.path.slice('library/'.length) : ref.path;
}

/** `<repository>@<digest>`: the exact bytes, whatever any tag points at now. */
export function digestReference(ref: string, digest: string): string {
  return `${familiarRepository(parseReference(ref))}@${digest}`;
}

/** The digest a RepoDigests list records for this reference's repository, if any. */
export function repoDigestOf(ref: string, repoDigests: readonly string[] | null | undefined): string | null {
  const repo = familiarRepository(parseReference(ref));
  for (const d of repoDigests ?? []) {
    const parsed = parseReference(d);
    if (parsed.digest && familiarRepository(parsed) === repo) return parsed.digest;
  }
  return null;
}
