// Plain files (index.html at the root or in public/) served by Caddy, dotfiles left out.
import { caddyStage } from './caddy.js';
import { Dockerfile, planOf } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { port as checkPort, relPath } from './validate.js';

const PORT = 8080;
export const STATIC_MARKERS = ['index.html', 'public/index.html'];

export async function planStatic(
  files: RepoFiles,
  o: StackOverride | undefined,
): Promise<Plan | string | null> {
  const warnings: string[] = [];
  let dir: string | null = null;
  if (o?.publish_dir !== undefined) {
    dir = relPath('(override)', 'publish_dir', o.publish_dir);
    if (!(await files.exists(dir)))
      throw new PlanError('(override)', 'publish_dir', `"${dir}" is not a folder of the repository`);
  } else if (await files.exists('index.html')) dir = '.';
  else if (await files.exists('public/index.html')) dir = 'public';
  if (dir === null) return null;
  for (const k of ['install', 'build', 'start'] as const)
    if (o?.[k] !== undefined) warnings.push(`${k} is ignored for plain files without a package.json`);
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : PORT;
  const df = new Dockerfile();
  // .git, .env and their kind are repository plumbing, not pages.
  const served = caddyStage(df, p, { src: dir === '.' ? '.' : dir, tidy: true });
  const detected_from = dir === '.' ? ['index.html'] : [`${dir}/index.html`];
  return planOf(df, { stack: 'static', detected_from, ...served, install: null, build: null, warnings });
}
