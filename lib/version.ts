// The product version, from package.json (found from the source tree or the compiled dist/ tree).
import { readFileSync } from 'node:fs';

let cached: string | null = null;

export function productVersion(): string {
  if (cached) return cached;
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const v = (JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { version?: unknown })
        .version;
      if (typeof v === 'string') return (cached = v);
    } catch {
      // try the next place
    }
  }
  return (cached = 'unknown');
}
