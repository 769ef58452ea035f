// A rollback runs exactly the images the deployment it returns to ran: by digest, never by a tag
// that may have moved since. Kept images are used where they are; an image the engine no longer
// has is pulled again by its digest (with the registry's credentials) when a registry has it.
import type { Engine } from '../docker/engine.js';
import { pullImage, PullError } from '../docker/pull.js';
import { digestReference } from '../docker/reference.js';
import { StackError } from '../docker/engine.js';
import { inspectImage, presentExact } from './digests.js';

/** Images the control plane built: tagged once per deployment, never pulled from anywhere. */
export const isBuiltImage = (ref: string) => ref.startsWith('svc/');

export interface ExactOptions {
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** Per service, the reference that runs exactly its recorded digest (pulled by digest if need be). */
export async function exactImages(
  engine: Engine,
  images: Record<string, string>,
  digests: Record<string, string> | null,
  opts: ExactOptions,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [service, ref] of Object.entries(images)) {
    opts.signal?.throwIfAborted();
    const digest = digests?.[service];
    // A deployment recorded before digests were: its references as they were kept.
    if (!digest) out[service] = ref;
    else if (isBuiltImage(ref)) out[service] = await builtExact(engine, service, ref, digest);
    else out[service] = await registryExact(engine, service, ref, digest, opts);
  }
  return out;
}

async function builtExact(engine: Engine, service: string, ref: string, digest: string): Promise<string> {
  const facts = await inspectImage(engine, ref);
  if (facts?.id === digest) return ref;
  if (await inspectImage(engine, digest)) return digest;
  throw new StackError(
    `${service}: the image this deployment built (${ref}, ${digest.slice(0, 19)}) is no longer kept; keep more with SVC_KEEP_IMAGES`,
    service,
  );
}

async function registryExact(
  engine: Engine,
  service: string,
  ref: string,
  digest: string,
  opts: ExactOptions,
): Promise<string> {
  const here = await presentExact(engine, ref, digest);
  if (here) {
    opts.log(`${service}: runs ${here} (kept on the engine)`);
    return here;
  }
  const exact = digestReference(ref, digest);
  opts.log(`${service}: ${exact} is no longer on the engine: pulling it by digest`);
  try {
    await pullImage(engine, exact, { policy: 'always', log: opts.log, signal: opts.signal });
  } catch (e) {
    if (!(e instanceof PullError)) throw e;
    throw new StackError(
      `${service}: the exact image of that deployment cannot be had again: ${e.message}`,
      service,
    );
  }
  return exact;
}
