import { createRequire } from 'node:module';

const requireCjs = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded on first use instead of at boot: most requests never parse a
 * compose file, pack a build context or match a trigger, and start-up time and memory count.
 */
export function lazyRequire<T>(name: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= requireCjs(name) as T);
}
