// What a deployment pulls: every image its services run that it does not build, before anything
// stops (the running version serves on while a pull fails), with the app's pull policy or a
// `pull: true` request. Progress goes to the deployment log as `pull` lines.
import type { Engine } from '../docker/engine.js';
import { pullImage, type PullPolicy } from '../docker/pull.js';
import { digestReference } from '../docker/reference.js';
import { inspectImage } from './digests.js';

export interface ServicePullOptions {
  policy: PullPolicy;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * Pulls each distinct reference once (a compose file may name one image twice). Answers the
 * `<repository>@<digest>` of every image a pull brought, for retention to know what it may remove.
 */
export async function pullServiceImages(
  engine: Engine,
  images: Record<string, string>,
  opts: ServicePullOptions,
): Promise<string[]> {
  const pulled: string[] = [];
  for (const ref of new Set(Object.values(images))) {
    opts.signal?.throwIfAborted();
    const ran = await pullImage(engine, ref, { policy: opts.policy, log: opts.log, signal: opts.signal });
    if (!ran) {
      opts.log(`${ref} is on the engine: not pulled (pull policy if_missing)`);
      continue;
    }
    const facts = await inspectImage(engine, ref);
    if (facts?.repoDigest) {
      pulled.push(digestReference(ref, facts.repoDigest));
      opts.log(`${ref}: pulled ${facts.repoDigest}`);
    }
  }
  return pulled;
}
