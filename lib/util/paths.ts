// Paths that a repository names (compose files, bind sources, env files, build contexts) are
// resolved on the host only through these: symlinks followed, then the result checked.
import { realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';

export function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}

/**
 * Resolves rel inside root (itself a real path), following symlinks of the longest existing
 * prefix, and refuses anything that lands outside (a symlink in the repository pointing at /etc,
 * say). The result is a real path as far as it exists; null when it escapes.
 */
export async function resolveInside(root: string, rel: string): Promise<string | null> {
  const target = resolve(root, rel);
  if (!within(root, target)) return null;
  let probe = target;
  let rest = '';
  for (;;) {
    try {
      const real = await realpath(probe);
      const full = rest ? join(real, rest) : real;
      return within(root, full) ? full : null;
    } catch {
      const parent = dirname(probe);
      if (parent === probe) return null;
      rest = rest ? join(probe.slice(parent.length + 1), rest) : probe.slice(parent.length + 1);
      probe = parent;
    }
  }
}
