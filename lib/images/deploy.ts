// The deployment's side of images, in the order the pipeline needs it: the pull policy that
// applies, and once every service's image is settled, the digests to record (and the keep tags
// that hold those images for a rollback).
import type { Engine } from '../docker/engine.js';
import type { PullPolicy } from '../docker/pull.js';
import { parseReference } from '../docker/reference.js';
import { imageDigest } from './digests.js';
import { keepDeploymentImages } from './keep.js';

/** `pull: true` (or a deploy hook) pulls everything again; otherwise the app's `source.pull`. */
export function pullPolicyOf(source: { pull?: PullPolicy }, pullAgain: boolean): PullPolicy {
  if (pullAgain) return 'always';
  return source.pull ?? 'if_missing';
}

/**
 * Per service, the exact image it runs: the digest a reference names (a cluster registry's), else
 * what the engine has under the reference (or under the local name it was published from).
 */
export async function settledDigests(
  engine: Engine,
  images: Record<string, string>,
  local: Record<string, string> = {},
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [service, ref] of Object.entries(images)) {
    const named = parseReference(ref).digest;
    const d = named ?? (await imageDigest(engine, local[service] ?? ref));
    if (d) out[service] = d;
  }
  return out;
}

/** Digests to record, and on one host the keep tags that hold those images for a rollback. */
export async function settleImages(
  engine: Engine,
  opts: {
    app: string;
    deploymentId: string;
    images: Record<string, string>;
    local?: Record<string, string>;
    swarm: boolean;
  },
): Promise<Record<string, string>> {
  const digests = await settledDigests(engine, opts.images, opts.local);
  if (!opts.swarm) await keepDeploymentImages(engine, opts.app, opts.deploymentId, opts.images);
  return digests;
}
